"""POST /api/v1/runs/{id}/cancel: stop a run at its next checkpoint, or at once if queued."""

import pytest

from agents_app.models import Run, RunEvent, RunStatus
from tests.support.api import assert_error, post_json
from tests.support.runs import advance, end, make_run


def cancel(client, run):
    return post_json(client, f"/api/v1/runs/{run.pk}/cancel")


def event_types(run, after: int = 0) -> list[str]:
    return list(
        RunEvent.objects.filter(run=run, seq__gt=after)
        .order_by("seq")
        .values_list("type", flat=True)
    )


@pytest.mark.dialect
def test_a_queued_run_is_cancelled_at_once(owner, owner_api):
    run = make_run(owner)

    response = cancel(owner_api, run)

    assert response.status_code == 200
    body = response.json()
    assert body["id"] == run.pk
    assert body["status"] == "cancelled"
    assert body["error_code"] == "CANCELLED"
    assert body["finished_at"] is not None
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    assert run.cancel_requested
    assert run.finished_at is not None


@pytest.mark.dialect
def test_a_queued_run_records_cancel_requested_then_the_status_and_result(owner, owner_api):
    run = make_run(owner)

    cancel(owner_api, run)

    assert event_types(run, after=1) == ["cancel_requested", "run_status", "result"]
    status_event = RunEvent.objects.get(run=run, type="run_status")
    assert status_event.payload == {"status": "cancelled"}
    result = RunEvent.objects.get(run=run, type="result").payload
    assert (result["status"], result["success"]) == ("cancelled", False)
    assert result["final_error"]["code"] == "CANCELLED"


@pytest.mark.dialect
def test_a_running_run_is_asked_to_stop_and_left_to_its_worker(owner, owner_api):
    run = advance(make_run(owner), RunStatus.RUNNING)
    seq_before = run.event_seq

    response = cancel(owner_api, run)

    assert response.status_code == 200
    assert (response.json()["status"], response.json()["cancel_requested"]) == ("running", True)
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING
    assert run.cancel_requested
    assert run.finished_at is None
    assert event_types(run, after=seq_before) == ["cancel_requested"]


@pytest.mark.dialect
def test_a_queued_run_a_worker_has_claimed_is_left_to_that_worker(owner, owner_api):
    run = make_run(owner)
    Run.objects.filter(pk=run.pk).update(lease_owner="worker-1")

    response = cancel(owner_api, run)

    assert response.json()["status"] == "queued"
    run.refresh_from_db()
    assert (run.status, run.cancel_requested) == (RunStatus.QUEUED, True)


@pytest.mark.dialect
def test_cancelling_twice_asks_only_once(owner, owner_api):
    run = advance(make_run(owner), RunStatus.PLANNING)
    seq_before = run.event_seq

    first = cancel(owner_api, run)
    second = cancel(owner_api, run)

    assert (first.status_code, second.status_code) == (200, 200)
    assert event_types(run, after=seq_before) == ["cancel_requested"]


@pytest.mark.parametrize(
    "status, code",
    [
        (RunStatus.SUCCEEDED, ""),
        (RunStatus.FAILED, "TOOL_FAILED"),
        (RunStatus.CANCELLED, "CANCELLED"),
    ],
)
def test_a_finished_run_cannot_be_cancelled(owner, owner_api, status, code):
    run = end(make_run(owner), status, code, "over")
    seq_before = run.event_seq

    error = assert_error(cancel(owner_api, run), 409, "CONFLICT")

    assert error["details"] == {"status": status.value}
    assert status.value in error["message"]
    run.refresh_from_db()
    assert run.status == status
    assert not run.cancel_requested
    assert run.event_seq == seq_before


def test_another_users_run_cannot_be_cancelled_and_is_not_found(owner, outsider_api):
    run = make_run(owner)

    error = assert_error(cancel(outsider_api, run), 404, "NOT_FOUND")

    assert error["details"] == {"run_id": run.pk}
    run.refresh_from_db()
    assert (run.status, run.cancel_requested, run.event_seq) == (RunStatus.QUEUED, False, 1)


def test_a_missing_run_cannot_be_cancelled(owner_api, owner):
    run = make_run(owner)
    run.pk += 1000

    assert_error(cancel(owner_api, run), 404, "NOT_FOUND")


def test_an_anonymous_client_cannot_cancel(owner, anonymous_client):
    run = make_run(owner)

    assert_error(cancel(anonymous_client, run), 401, "UNAUTHORIZED")
    run.refresh_from_db()
    assert not run.cancel_requested


def test_a_session_cannot_cancel_without_a_csrf_token(owner, anonymous_client):
    run = make_run(owner)
    anonymous_client.force_login(owner)

    assert_error(cancel(anonymous_client, run), 403, "FORBIDDEN")
    run.refresh_from_db()
    assert not run.cancel_requested


def test_cancel_only_answers_post(owner, owner_api):
    run = make_run(owner)

    error = assert_error(owner_api.get(f"/api/v1/runs/{run.pk}/cancel"), 405, "METHOD_NOT_ALLOWED")

    assert error["details"]["allowed_methods"] == ["POST"]
