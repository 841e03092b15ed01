"""Submit, cancel and restart from every interface leave one AuditEvent naming who and where."""

import pytest

from agents_app.models import AuditEvent, Run, RunStatus
from tests.support.api import post_json, submit
from tests.support.runs import end, make_run

RUNS_ADMIN = "/admin/agents_app/run/"


def only_event(action: str) -> AuditEvent:
    [event] = AuditEvent.objects.filter(action=action)
    return event


def test_a_task_submitted_over_rest_is_recorded_as_the_owner_s_api_act(
    owner, owner_api, llm_configured
):
    response = submit(owner_api, task="Summarise the notes")

    run = Run.objects.get(pk=response.json()["run_id"])
    event = only_event("task.submit")
    assert (event.interface, event.actor, event.actor_label) == ("api", owner, "owner")
    assert event.run_id == run.pk
    assert event.details == {"task_id": run.task_id}


def test_a_task_submitted_from_the_page_is_recorded_as_a_web_act(
    owner, owner_session, llm_configured
):
    response = owner_session.post("/tasks/new/", {"task": "Summarise the notes", "context": ""})

    assert response.status_code == 302
    event = only_event("task.submit")
    assert (event.interface, event.actor) == ("web", owner)
    assert event.run_id == Run.objects.get().pk


def test_a_refused_submission_records_nothing(owner_api, llm_configured):
    response = submit(owner_api, task="   ")

    assert response.status_code == 400
    assert not AuditEvent.objects.exists()


def test_a_cancel_over_rest_is_recorded_with_the_status_it_stopped(owner, owner_api):
    run = make_run(owner)

    response = post_json(owner_api, f"/api/v1/runs/{run.pk}/cancel")

    assert response.status_code == 200
    event = only_event("run.cancel")
    assert (event.interface, event.actor, event.run_id) == ("api", owner, run.pk)
    assert event.details == {"status_before": "queued", "ended_at_once": True}


def test_a_cancel_from_the_page_is_recorded_as_a_web_act(owner, owner_session):
    run = make_run(owner)

    owner_session.post(f"/runs/{run.pk}/cancel/")

    event = only_event("run.cancel")
    assert (event.interface, event.actor, event.run_id) == ("web", owner, run.pk)


def test_cancelling_a_finished_run_is_refused_and_records_nothing(owner, owner_api):
    run = end(make_run(owner), RunStatus.FAILED, "TOOL_FAILED", "broke")

    response = post_json(owner_api, f"/api/v1/runs/{run.pk}/cancel")

    assert response.status_code == 409
    assert not AuditEvent.objects.filter(action="run.cancel").exists()


def test_an_outsider_cannot_cancel_and_nothing_is_recorded(owner, outsider):
    from tests.support.clients import key_client, make_api_key

    run = make_run(owner)

    response = post_json(key_client(make_api_key(outsider)), f"/api/v1/runs/{run.pk}/cancel")

    assert response.status_code == 404
    assert not AuditEvent.objects.exists()


def test_a_restart_over_rest_is_recorded_on_the_restarted_run_naming_the_new_one(owner, owner_api):
    run = end(make_run(owner), RunStatus.FAILED, "TOOL_FAILED", "broke")

    response = post_json(owner_api, f"/api/v1/runs/{run.pk}/restart")

    new_run_id = response.json()["id"]
    event = only_event("run.restart")
    assert (event.interface, event.actor, event.run_id) == ("api", owner, run.pk)
    assert event.details == {"new_run_id": new_run_id, "attempt": 2}


def test_a_restart_from_the_page_is_recorded_as_a_web_act(owner, owner_session):
    run = end(make_run(owner), RunStatus.CANCELLED, "CANCELLED", "stopped")

    owner_session.post(f"/runs/{run.pk}/restart/")

    event = only_event("run.restart")
    assert (event.interface, event.actor, event.run_id) == ("web", owner, run.pk)


def test_staff_stop_selected_runs_from_the_admin_as_admin_acts(owner, superuser, superuser_admin):
    staff = superuser
    queued = make_run(owner)
    running = make_run(owner)
    Run.objects.filter(pk=running.pk).update(status=RunStatus.RUNNING, lease_owner="w1")
    finished = end(make_run(owner), RunStatus.SUCCEEDED, response="done")

    response = superuser_admin.post(
        RUNS_ADMIN,
        {"action": "stop_selected", "_selected_action": [queued.pk, running.pk, finished.pk]},
        follow=True,
    )

    shown = [str(m) for m in response.context["messages"]]
    assert "Asked 2 run(s) to stop; queued ones stopped at once." in shown
    assert f"Already finished, left alone: {finished.pk}." in shown
    queued.refresh_from_db()
    running.refresh_from_db()
    assert queued.status == RunStatus.CANCELLED
    assert running.cancel_requested and running.status == RunStatus.RUNNING
    events = AuditEvent.objects.filter(action="run.cancel").order_by("run_id")
    assert [(e.run_id, e.interface, e.actor, e.details["ended_at_once"]) for e in events] == [
        (queued.pk, "admin", staff, True),
        (running.pk, "admin", staff, False),
    ]


@pytest.mark.parametrize("path", ["/admin/agents_app/auditevent/", RUNS_ADMIN])
def test_a_non_staff_user_cannot_reach_the_runs_or_audit_admin(owner, owner_session, path):
    response = owner_session.get(path)

    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")
