"""The staff-only kill switch: runs pause at their next step boundary, none start, release
resumes them where they were; visible on every page; every change audited."""

import json

import pytest

from agents_app.models import AuditEvent, KillSwitch, Run, RunEvent, Step
from agents_app.runs.control import kill_switch_set
from agents_app.runs.services import run_cancel
from agents_app.worker.execution import execute_run
from tests.support.runs import make_run
from tests.support.script import plan_reply, step, verdict
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import make_registry


@pytest.mark.dialect
@pytest.mark.django_db(transaction=True)
def test_a_run_pauses_at_the_next_step_and_resumes_where_it_was_on_release(owner, superuser):
    staff = superuser

    def engage_then_answer(request):
        kill_switch_set(engaged=True, actor=staff, interface="admin", reason="incident 42")
        return {"content": "a done"}

    provider = ScriptedProvider(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("a"), step("b"))]},
            {"match": "AGENTDESK:STEP 0", "replies": [engage_then_answer]},
            {"match": "AGENTDESK:STEP 1", "replies": [{"content": "b done"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "both")]},
        ]
    )
    run = make_run(owner)
    execute_run(run.pk, provider=provider, registry=make_registry())
    run.refresh_from_db()
    assert (run.status, run.resume_status, run.lease_owner) == ("paused", "running", "")
    assert [s.status for s in Step.objects.filter(run=run).order_by("index")] == [
        "completed",
        "pending",
    ]
    assert not any("AGENTDESK:STEP 1" in r.messages[0]["content"] for r in provider.requests)

    kill_switch_set(engaged=False, actor=staff, interface="admin")
    run.refresh_from_db()
    assert (run.status, run.resume_status) == ("running", "")
    execute_run(run.pk, provider=provider, registry=make_registry())
    run.refresh_from_db()
    assert run.status == "succeeded" and run.final_response == "both"
    statuses = [e.payload["status"] for e in RunEvent.objects.filter(run=run, type="run_status")]
    assert statuses == ["planning", "running", "paused", "running", "verifying", "succeeded"]
    actions = list(
        AuditEvent.objects.filter(action__startswith="kill_switch")
        .order_by("id")
        .values_list("action", flat=True)
    )
    assert actions == ["kill_switch.engage", "kill_switch.release"]
    release = AuditEvent.objects.get(action="kill_switch.release")
    assert release.details["resumed_runs"] == [run.pk] and release.actor == staff


@pytest.mark.django_db
def test_no_run_starts_while_engaged(client, owner, superuser, llm_configured, api_key_for):
    kill_switch_set(engaged=True, actor=superuser, interface="admin", reason="maintenance")
    response = client.post(
        "/api/v1/agent/task",
        json.dumps({"task": "anything"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=api_key_for(owner).decode(),
    )
    body = response.json()
    assert response.status_code == 503 and body["error"]["code"] == "SERVICE_UNAVAILABLE"
    assert body["error"]["details"] == {"kill_switch": "engaged", "reason": "maintenance"}
    assert not Run.objects.exists()


@pytest.mark.dialect
@pytest.mark.django_db
def test_a_queued_or_paused_run_is_cancelled_at_once(owner, superuser):
    run = make_run(owner)
    Run.objects.filter(pk=run.pk).update(status="paused", resume_status="running")
    cancelled = run_cancel(run=Run.objects.get(pk=run.pk), actor=owner, interface="web")
    assert cancelled.status == "cancelled"


@pytest.mark.django_db
def test_every_page_shows_the_engaged_switch(client, owner, superuser):
    client.force_login(owner)
    assert 'id="kill-switch"' not in client.get("/").content.decode()
    kill_switch_set(engaged=True, actor=superuser, interface="admin", reason="incident 42")
    for url in ["/", "/tasks/new/", "/tools/"]:
        html = client.get(url).content.decode()
        assert 'id="kill-switch"' in html and "incident 42" in html, url
    assert "Release it in the admin" not in client.get("/").content.decode()  # not staff


@pytest.mark.dialect
@pytest.mark.django_db
def test_staff_engage_and_release_it_in_the_admin(client, superuser):
    client.force_login(superuser)
    KillSwitch.current()
    response = client.post(
        "/admin/agents_app/killswitch/1/change/", {"engaged": "on", "reason": "drill"}
    )
    assert response.status_code == 302
    assert KillSwitch.is_engaged()
    assert AuditEvent.objects.get(action="kill_switch.engage").interface == "admin"
    client.post("/admin/agents_app/killswitch/1/change/", {"reason": ""})
    assert not KillSwitch.is_engaged()


@pytest.mark.django_db
def test_people_who_are_not_staff_cannot_touch_it(client, owner):
    client.force_login(owner)
    response = client.post("/admin/agents_app/killswitch/1/change/", {"engaged": "on"})
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert not KillSwitch.is_engaged()
