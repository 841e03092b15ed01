"""GET /api/v1/runs/{id}/events?after=N: the run's event log, resumable by seq."""

import pytest

from agents_app.models import RunStatus
from agents_app.runs.writer import locked_run
from tests.support.api import assert_error
from tests.support.runs import advance, make_run

pytestmark = pytest.mark.dialect


def events_url(run) -> str:
    return f"/api/v1/runs/{run.pk}/events"


def add_events(run, count: int) -> None:
    with locked_run(run.pk) as w:
        for i in range(count):
            w.event("token", {"text": f"t{i}"})


@pytest.fixture
def run(owner):
    """A queued run with six events: run_queued, then five tokens."""
    run = make_run(owner, "Write a haiku")
    add_events(run, 5)
    return run


def test_it_lists_the_events_in_seq_order(run, owner_api):
    body = owner_api.get(events_url(run)).json()

    assert body["success"] is True
    assert body["run_id"] == run.pk
    assert body["status"] == "queued"
    assert [e["seq"] for e in body["events"]] == [1, 2, 3, 4, 5, 6]
    assert body["events"][0]["type"] == "run_queued"
    assert body["events"][0]["payload"] == {"task": "Write a haiku", "attempt": 1}
    assert [e["payload"] for e in body["events"][1:]] == [{"text": f"t{i}"} for i in range(5)]
    assert all(e["created_at"] for e in body["events"])
    assert body["last_seq"] == 6
    assert body["has_more"] is False


def test_it_lists_only_the_events_after_a_seq(run, owner_api):
    body = owner_api.get(events_url(run), {"after": 4}).json()

    assert [e["seq"] for e in body["events"]] == [5, 6]
    assert body["last_seq"] == 6
    assert body["has_more"] is False


def test_it_pages_with_limit_and_says_when_there_is_more(run, owner_api):
    first = owner_api.get(events_url(run), {"limit": 4}).json()
    rest = owner_api.get(events_url(run), {"after": first["last_seq"], "limit": 4}).json()

    assert [e["seq"] for e in first["events"]] == [1, 2, 3, 4]
    assert (first["last_seq"], first["has_more"]) == (4, True)
    assert [e["seq"] for e in rest["events"]] == [5, 6]
    assert (rest["last_seq"], rest["has_more"]) == (6, False)


def test_a_limit_equal_to_what_is_left_has_no_more(run, owner_api):
    body = owner_api.get(events_url(run), {"after": 2, "limit": 4}).json()

    assert [e["seq"] for e in body["events"]] == [3, 4, 5, 6]
    assert body["has_more"] is False


def test_after_the_last_seq_it_answers_no_events_and_keeps_the_seq(run, owner_api):
    body = owner_api.get(events_url(run), {"after": 6}).json()

    assert body["events"] == []
    assert (body["last_seq"], body["has_more"]) == (6, False)


def test_it_reports_the_current_status_of_the_run(run, owner_api):
    advance(run, RunStatus.RUNNING)

    body = owner_api.get(events_url(run), {"after": 6}).json()

    assert body["status"] == "running"
    assert [(e["type"], e["payload"]) for e in body["events"]] == [
        ("run_status", {"status": "planning"}),
        ("run_status", {"status": "running"}),
    ]


def test_it_shows_only_the_events_of_the_run_asked_for(run, owner, owner_api):
    other = make_run(owner, "Another")
    add_events(other, 3)

    body = owner_api.get(events_url(run)).json()

    assert len(body["events"]) == 6
    assert body["events"][0]["payload"] == {"task": "Write a haiku", "attempt": 1}


@pytest.mark.parametrize(
    "query, field",
    [
        ({"after": -1}, "after"),
        ({"after": "x"}, "after"),
        ({"limit": 0}, "limit"),
        ({"limit": 1001}, "limit"),
    ],
)
def test_it_refuses_bad_query_parameters(run, owner_api, query, field):
    response = owner_api.get(events_url(run), query)

    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert [e["field"] for e in error["details"]["errors"]] == [field]


def test_another_users_events_are_not_found(run, outsider_api):
    error = assert_error(outsider_api.get(events_url(run)), 404, "NOT_FOUND")

    assert error["details"] == {"run_id": run.pk}


def test_the_events_of_a_missing_run_are_not_found(owner_api, run):
    response = owner_api.get(f"/api/v1/runs/{run.pk + 1000}/events")

    assert_error(response, 404, "NOT_FOUND")


def test_the_events_of_a_run_with_a_non_integer_id_are_not_found(owner_api):
    assert_error(owner_api.get("/api/v1/runs/abc/events"), 404, "NOT_FOUND")


def test_the_events_refuse_an_anonymous_client(run, anonymous_client):
    assert_error(anonymous_client.get(events_url(run)), 401, "UNAUTHORIZED")
