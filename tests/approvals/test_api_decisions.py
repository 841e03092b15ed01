"""The approvals REST API: deciding one approval, conflicts, plans, staff, CSRF, bad bodies."""

import json
from datetime import datetime

import pytest
import redis
from django.conf import settings
from django.test import Client
from django.utils import timezone

from agents_app.approvals.rules import rule_create
from agents_app.models import Approval, ApprovalRule, AuditEvent, RunEvent, Step, Task, ToolCall
from agents_app.runs.services import run_create
from config.celery import app as celery_app
from tests.support.api import assert_error, post_json
from tests.support.approvals import APPROVALS, SCRIPT, decide, drive, parked, pending
from tests.support.runs import make_run
from tests.support.scripted_provider import ScriptedProvider

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def broker_queue():
    """The Redis list the workers read, as (client, key), emptied after the test."""
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    queue = celery_app.conf.task_default_queue
    yield broker, queue
    broker.delete(queue)


@pytest.mark.dialect
def test_approve_runs_the_call_once_and_records_the_api(owner, owner_api, send, registry):
    run, provider, approval = parked(owner, registry)

    response = decide(owner_api, approval.pk, decision="approve")

    assert response.status_code == 200
    body = response.json()
    assert (body["id"], body["status"], body["decided_by"], body["decided_via"]) == (
        approval.pk,
        "approved",
        "owner",
        "api",
    )
    assert send.calls == []  # a decision only queues the run again
    run.refresh_from_db()
    assert run.status == "running"
    drive(run, provider, registry)
    assert run.status == "succeeded"
    assert send.calls == [{"to": "ann", "text": "hi"}]
    audit = AuditEvent.objects.get(action="approval.decide", run_id=run.pk)
    assert (audit.interface, audit.actor, audit.details["decision"]) == ("api", owner, "approve")


@pytest.mark.dialect
def test_a_second_decision_is_a_conflict_and_the_first_wins(owner, owner_api, send, registry):
    owner_client = owner_api
    run, provider, approval = parked(owner, registry)
    assert decide(owner_client, approval.pk, decision="approve").status_code == 200

    error = assert_error(decide(owner_client, approval.pk, decision="deny"), 409, "CONFLICT")
    assert_error(decide(owner_client, approval.pk, decision="approve"), 409, "CONFLICT")

    assert error["details"]["status"] == "approved"
    assert error["details"]["approval"]["decided_via"] == "api"
    drive(run, provider, registry)
    assert run.status == "succeeded" and len(send.calls) == 1
    assert AuditEvent.objects.filter(action="approval.decide").count() == 1


@pytest.mark.dialect
def test_modify_runs_the_edited_arguments(owner, owner_api, send, registry):
    run, provider, approval = parked(owner, registry)

    response = decide(
        owner_api, approval.pk, decision="modify", arguments={"to": "bob", "text": "hello"}
    )

    body = response.json()
    assert response.status_code == 200
    assert body["status"] == "modified"
    assert body["decision_arguments"] == {"to": "bob", "text": "hello"}
    assert body["arguments"] == {"to": "ann", "text": "hi"}  # what the model asked stays
    drive(run, provider, registry)
    assert run.status == "succeeded"
    assert send.calls == [{"to": "bob", "text": "hello"}]
    assert ToolCall.objects.get(run=run).arguments == {"to": "bob", "text": "hello"}


@pytest.mark.parametrize(
    ("arguments", "path"),
    [({"to": 5, "text": "hi"}, "to"), ({"to": "bob"}, ""), ({"to": "b", "text": "x", "cc": 1}, "")],
)
def test_modify_with_arguments_that_do_not_fit_is_refused(
    owner, owner_api, send, registry, arguments, path
):
    run, _, approval = parked(owner, registry)

    response = decide(owner_api, approval.pk, decision="modify", arguments=arguments)

    error = assert_error(response, 400, "INVALID_ARGUMENTS")
    assert error["details"]["tool"] == "send"
    assert error["details"]["errors"][0]["path"] == path
    assert all(e["message"] for e in error["details"]["errors"])
    approval.refresh_from_db()
    run.refresh_from_db()
    assert approval.status == "pending" and run.status == "waiting_approval"
    assert send.calls == []


def test_modify_without_arguments_is_refused(owner, owner_api, registry):
    _, _, approval = parked(owner, registry)

    error = assert_error(
        decide(owner_api, approval.pk, decision="modify"), 400, "INVALID_ARGUMENTS"
    )

    assert error["details"] == {"field": "arguments"}
    approval.refresh_from_db()
    assert approval.status == "pending"


@pytest.mark.dialect
def test_skip_skips_the_step(owner, owner_api, send, registry):
    owner_client = owner_api
    run, provider, approval = parked(owner, registry)

    assert decide(owner_client, approval.pk, decision="skip").json()["status"] == "skipped"

    drive(run, provider, registry)
    assert send.calls == []
    assert Step.objects.get(run=run, index=0).status == "skipped"
    assert ToolCall.objects.get(run=run).status == "skipped"


@pytest.mark.dialect
def test_cancel_cancels_the_run(owner, owner_api, send, registry):
    owner_client = owner_api
    run, _, approval = parked(owner, registry)

    assert decide(owner_client, approval.pk, decision="cancel").json()["status"] == "cancelled"

    run.refresh_from_db()
    assert run.status == "cancelled" and send.calls == []
    assert "owner" in run.error_message


@pytest.mark.dialect
def test_deny_refuses_the_call_and_the_run_goes_on(owner, owner_api, send, registry):
    owner_client = owner_api
    run, provider, approval = parked(owner, registry)

    assert decide(owner_client, approval.pk, decision="deny").json()["status"] == "denied"

    drive(run, provider, registry)
    assert run.status == "succeeded" and send.calls == []
    assert ToolCall.objects.get(run=run).status == "denied"
    last = [r for r in provider.requests if "AGENTDESK:STEP 0" in r.messages[0]["content"]][-1]
    assert "denied" in last.messages[-1]["content"]


@pytest.mark.dialect
def test_approve_and_remember_the_tool_creates_a_rule_that_spares_the_next_run(
    owner, owner_api, send, registry
):
    owner_client = owner_api
    _, _, approval = parked(owner, registry)

    assert decide(owner_client, approval.pk, decision="approve", remember="tool").status_code == 200

    rule = ApprovalRule.objects.get(owner=owner)
    assert (rule.tool, rule.arguments_sha256, rule.created_via) == ("send", "", "api")
    run = make_run(owner)
    drive(run, ScriptedProvider(SCRIPT), registry)
    assert run.status == "succeeded" and Approval.objects.filter(run=run).count() == 0


@pytest.mark.dialect
def test_a_plan_approval_is_approved_through_the_api(owner, owner_api, send, registry):
    owner_client = owner_api
    rule_create(owner_id=owner.pk, tool="send", arguments=None, actor=owner, interface="web")
    run = run_create(task=Task.objects.create(owner=owner, text="Do it", approve_plan=True))
    provider = ScriptedProvider(SCRIPT)
    drive(run, provider, registry)
    approval = Approval.objects.get(run=run)
    assert approval.kind == "plan"

    assert_error(decide(owner_client, approval.pk, decision="skip"), 400, "VALIDATION_ERROR")
    assert decide(owner_client, approval.pk, decision="approve").status_code == 200

    drive(run, provider, registry)
    assert run.status == "succeeded" and len(send.calls) == 1


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"decision": "maybe"},
        {"decision": "APPROVE"},
        {"decision": 1},
        {"decision": "approve", "remember": "forever"},
        {"decision": "deny", "remember": "tool"},
        {"decision": "approve", "arguments": {"to": "bob", "text": "x"}},
        {"decision": "modify", "arguments": "to bob"},
        ["approve"],
    ],
)
def test_a_bad_decision_body_is_refused(owner, owner_api, registry, body):
    run, _, approval = parked(owner, registry)

    assert_error(post_json(owner_api, f"{APPROVALS}/{approval.pk}", body), 400, "VALIDATION_ERROR")

    approval.refresh_from_db()
    assert approval.status == "pending"
    assert not ApprovalRule.objects.exists()


def test_a_body_that_is_not_json_is_refused(owner, owner_api):
    approval = pending(owner)

    response = owner_api.post(
        f"{APPROVALS}/{approval.pk}", data="decision=approve", content_type="application/json"
    )

    assert_error(response, 400, "VALIDATION_ERROR")


def test_staff_decide_another_users_approval(owner, staff, staff_api, send, registry):
    staff_client = staff_api
    run, provider, approval = parked(owner, registry)

    assert staff_client.get(f"{APPROVALS}/{approval.pk}").status_code == 200
    body = decide(staff_client, approval.pk, decision="approve").json()

    assert (body["status"], body["decided_by"]) == ("approved", "staff")
    drive(run, provider, registry)
    assert run.status == "succeeded" and len(send.calls) == 1
    # Staff see it, but it is not theirs: their own list stays empty.
    assert staff_client.get(APPROVALS).json()["count"] == 0


def test_a_session_decision_needs_the_csrf_token(owner):
    approval = pending(owner)
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)

    assert_error(decide(client, approval.pk, decision="deny"), 403, "FORBIDDEN")
    approval.refresh_from_db()
    assert approval.status == "pending"

    client.get("/admin/login/")
    token = client.cookies["csrftoken"].value
    response = post_json(
        client, f"{APPROVALS}/{approval.pk}", {"decision": "deny"}, headers={"x-csrftoken": token}
    )
    assert response.status_code == 200 and response.json()["decided_via"] == "api"


@pytest.mark.dialect
def test_a_decision_is_stamped_with_its_time_and_announced_on_the_run(owner, owner_api, registry):
    run, _, approval = parked(owner, registry)
    before = timezone.now()

    body = decide(owner_api, approval.pk, decision="deny").json()

    assert before <= datetime.fromisoformat(body["decided_at"]) <= timezone.now()
    announced = RunEvent.objects.get(run=run, type="approval_decided").payload
    assert (announced["id"], announced["status"], announced["decided_at"]) == (
        approval.pk,
        "denied",
        body["decided_at"],
    )


@pytest.mark.dialect
def test_a_decision_that_lets_the_run_go_on_queues_it_for_a_worker(
    owner, owner_api, registry, broker_queue
):
    run, _, approval = parked(owner, registry)
    broker, queue = broker_queue
    broker.delete(queue)

    decide(owner_api, approval.pk, decision="approve")

    queued = [json.loads(raw)["headers"] for raw in broker.lrange(queue, 0, -1)]
    assert [(h["task"], h["argsrepr"]) for h in queued] == [
        ("agents_app.tasks.execute_run", f"({run.pk},)")
    ]
