"""GET /api/v1/runs and GET /api/v1/runs/{id}: a person's runs, and one run in full."""

from datetime import timedelta

import pytest
from django.utils import timezone

from agents_app.models import Plan, Run, RunStatus, Step, StepStatus, ToolCall, ToolCallStatus
from tests.support.api import assert_error
from tests.support.runs import advance, end, make_run

RUNS = "/api/v1/runs"


def make_runs(owner, count: int) -> list[Run]:
    """`count` runs, each a minute newer than the one before; returned oldest first."""
    start = timezone.now() - timedelta(hours=1)
    runs = []
    for i in range(count):
        run = make_run(owner, f"Task {i}")
        Run.objects.filter(pk=run.pk).update(created_at=start + timedelta(minutes=i))
        runs.append(run)
    return runs


# --- the list ---------------------------------------------------------------------------------


def test_the_list_holds_only_the_callers_runs(owner, outsider, owner_api, outsider_api):
    mine = make_run(owner, "Mine")
    theirs = make_run(outsider, "Theirs")

    owner_list = owner_api.get(RUNS).json()
    outsider_list = outsider_api.get(RUNS).json()

    assert [r["id"] for r in owner_list["results"]] == [mine.pk]
    assert owner_list["count"] == 1
    assert [r["id"] for r in outsider_list["results"]] == [theirs.pk]


def test_the_list_is_empty_for_someone_without_runs(outsider_api, owner):
    make_run(owner)

    body = outsider_api.get(RUNS).json()

    assert body == {"success": True, "count": 0, "page": 1, "page_size": 20, "results": []}


@pytest.mark.dialect
def test_the_list_shows_the_newest_run_first(owner, owner_api):
    runs = make_runs(owner, 3)

    body = owner_api.get(RUNS).json()

    assert [r["id"] for r in body["results"]] == [r.pk for r in reversed(runs)]


def test_the_list_summarises_each_run(owner, owner_api):
    run = make_run(owner, "Count the words", max_tokens=900, max_tool_calls=4)

    [item] = owner_api.get(RUNS).json()["results"]

    assert item["id"] == run.pk
    assert item["task_id"] == run.task_id
    assert item["task"] == "Count the words"
    assert item["status"] == "queued"
    assert (item["attempt"], item["replans"]) == (1, 0)
    assert (item["max_tokens"], item["max_tool_calls"]) == (900, 4)
    assert (item["prompt_tokens"], item["completion_tokens"], item["tool_calls_made"]) == (0, 0, 0)
    assert item["started_at"] is None and item["finished_at"] is None
    assert (item["final_response"], item["error_code"], item["error_message"]) == ("", "", "")
    assert item["links"] == {
        "self": f"/api/v1/runs/{run.pk}",
        "events": f"/api/v1/runs/{run.pk}/events",
        "cancel": f"/api/v1/runs/{run.pk}/cancel",
        "restart": f"/api/v1/runs/{run.pk}/restart",
        "websocket": f"/ws/api/runs/{run.pk}/",
    }


@pytest.mark.dialect
def test_the_list_is_paginated(owner, owner_api):
    runs = list(reversed(make_runs(owner, 5)))

    pages = [owner_api.get(RUNS, {"page": page, "page_size": 2}).json() for page in (1, 2, 3, 4)]

    assert [p["count"] for p in pages] == [5, 5, 5, 5]
    assert [p["page"] for p in pages] == [1, 2, 3, 4]
    assert [p["page_size"] for p in pages] == [2, 2, 2, 2]
    assert [[r["id"] for r in p["results"]] for p in pages] == [
        [runs[0].pk, runs[1].pk],
        [runs[2].pk, runs[3].pk],
        [runs[4].pk],
        [],
    ]


@pytest.mark.dialect
def test_the_list_filters_by_status(owner, owner_api):
    queued = make_run(owner, "Waiting")
    running = advance(make_run(owner, "Working"), RunStatus.RUNNING)
    failed = end(make_run(owner, "Broken"), RunStatus.FAILED, "TOOL_FAILED", "no")

    def ids(status):
        body = owner_api.get(RUNS, {"status": status}).json()
        assert body["count"] == len(body["results"])
        return [r["id"] for r in body["results"]]

    assert ids("queued") == [queued.pk]
    assert ids("running") == [running.pk]
    assert ids("failed") == [failed.pk]
    assert ids("succeeded") == []


@pytest.mark.parametrize(
    "query, field",
    [
        ({"status": "bogus"}, "status"),
        ({"page": 0}, "page"),
        ({"page": -1}, "page"),
        ({"page": "two"}, "page"),
        ({"page_size": 0}, "page_size"),
        ({"page_size": 101}, "page_size"),
        ({"page_size": 1000}, "page_size"),
    ],
)
def test_the_list_refuses_bad_query_parameters(owner_api, query, field):
    response = owner_api.get(RUNS, query)

    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert [e["field"] for e in error["details"]["errors"]] == [field]
    assert field in error["message"]


@pytest.mark.dialect
def test_the_list_accepts_the_largest_page_size(owner_api):
    response = owner_api.get(RUNS, {"page_size": 100})

    assert response.status_code == 200


def test_the_list_refuses_an_anonymous_client(owner, anonymous_client):
    make_run(owner)

    assert_error(anonymous_client.get(RUNS), 401, "UNAUTHORIZED")


@pytest.mark.dialect
def test_the_list_reads_a_full_page_of_runs_in_three_queries(
    owner, owner_api, django_assert_num_queries
):
    make_runs(owner, 12)
    owner_api.get(RUNS)  # the key's last_used_at is written on first use only

    # the key with its user, the count, the page of runs with their tasks
    with django_assert_num_queries(3):
        response = owner_api.get(RUNS)

    assert len(response.json()["results"]) == 12


# --- one run ----------------------------------------------------------------------------------


def make_plan(run: Run, version: int, objectives: list[str], reason: str = "") -> list[Step]:
    plan = Plan.objects.create(run=run, version=version, reason=reason)
    return [
        Step.objects.create(
            plan=plan,
            run=run,
            index=index,
            objective=objective,
            tool_names=["echo"],
            reasoning=f"because {index}",
            depends_on=[index - 1] if index else [],
        )
        for index, objective in enumerate(objectives)
    ]


def test_a_run_shows_its_context_and_summary(owner, owner_api):
    run = make_run(owner, "Count the words")
    run.task.context = {"file": "notes.md"}
    run.task.save()

    body = owner_api.get(f"{RUNS}/{run.pk}").json()

    assert body["id"] == run.pk
    assert body["task"] == "Count the words"
    assert body["context"] == {"file": "notes.md"}
    assert body["status"] == "queued"
    assert body["plans"] == []
    assert body["links"]["self"] == f"{RUNS}/{run.pk}"


@pytest.mark.dialect
def test_a_run_shows_its_plans_steps_and_tool_calls_in_order(owner, owner_api):
    run = make_run(owner)
    # Made newest first, to show the order comes from the versions, not the row ids.
    second, _ = make_plan(run, 2, ["Read the file", "Answer"], reason="the first failed")
    make_plan(run, 1, ["Look", "Give up"])
    Step.objects.filter(pk=second.pk).update(
        status=StepStatus.COMPLETED, output="read it", retry_count=1
    )
    ToolCall.objects.create(
        run=run,
        step=second,
        tool="read_file",
        arguments={"path": "a.txt"},
        error="no such file",
        status=ToolCallStatus.FAILED,
        attempt=0,
    )
    ToolCall.objects.create(
        run=run,
        step=second,
        tool="read_file",
        arguments={"path": "b.txt"},
        result={"content": "hello"},
        status=ToolCallStatus.SUCCEEDED,
        attempt=1,
        duration_ms=12,
    )

    body = owner_api.get(f"{RUNS}/{run.pk}").json()

    assert [(p["version"], p["reason"]) for p in body["plans"]] == [
        (1, ""),
        (2, "the first failed"),
    ]
    first_plan, second_plan = body["plans"]
    assert [s["objective"] for s in first_plan["steps"]] == ["Look", "Give up"]
    read, answer = second_plan["steps"]
    assert read["index"] == 0
    assert read["objective"] == "Read the file"
    assert read["status"] == "completed"
    assert read["output"] == "read it"
    assert read["retry_count"] == 1
    assert read["tool_names"] == ["echo"]
    assert read["reasoning"] == "because 0"
    assert answer["depends_on"] == [0]
    assert answer["tool_calls"] == []
    failed_call, good_call = read["tool_calls"]
    assert failed_call["tool"] == "read_file"
    assert failed_call["arguments"] == {"path": "a.txt"}
    assert (failed_call["status"], failed_call["error"], failed_call["result"]) == (
        "failed",
        "no such file",
        None,
    )
    assert (good_call["status"], good_call["result"], good_call["attempt"]) == (
        "succeeded",
        {"content": "hello"},
        1,
    )
    assert good_call["duration_ms"] == 12


def test_a_finished_run_shows_its_outcome(owner, owner_api):
    run = end(make_run(owner), RunStatus.SUCCEEDED, response="42 words")

    body = owner_api.get(f"{RUNS}/{run.pk}").json()

    assert body["status"] == "succeeded"
    assert body["final_response"] == "42 words"
    assert body["started_at"] is not None
    assert body["finished_at"] is not None


@pytest.mark.dialect
def test_a_run_is_read_in_a_fixed_number_of_queries(
    owner, owner_api, django_assert_max_num_queries
):
    run = make_run(owner)
    for version in (1, 2, 3):
        for step in make_plan(run, version, ["a", "b", "c"]):
            ToolCall.objects.create(run=run, step=step, tool="echo", arguments={})
    owner_api.get(f"{RUNS}/{run.pk}")  # the key's last_used_at is written on first use only

    # the key, the run, plans, steps, tool calls, the plans a person rejected (issue 32, 6)
    with django_assert_max_num_queries(6):
        response = owner_api.get(f"{RUNS}/{run.pk}")

    assert response.status_code == 200


def test_another_users_run_is_not_found_like_a_missing_one(owner, outsider_api):
    run = make_run(owner)
    missing = run.pk + 1000

    theirs = assert_error(outsider_api.get(f"{RUNS}/{run.pk}"), 404, "NOT_FOUND")
    absent = assert_error(outsider_api.get(f"{RUNS}/{missing}"), 404, "NOT_FOUND")

    assert theirs["message"] == f"Run {run.pk} not found"
    assert theirs["details"] == {"run_id": run.pk}
    assert absent["message"] == f"Run {missing} not found"


@pytest.mark.parametrize("run_id", ["abc", "1.5", "-1", "%20"])
def test_a_run_id_that_is_not_an_integer_is_not_found(owner_api, run_id):
    assert_error(owner_api.get(f"{RUNS}/{run_id}"), 404, "NOT_FOUND")


def test_a_run_refuses_an_anonymous_client(owner, anonymous_client):
    run = make_run(owner)

    assert_error(anonymous_client.get(f"{RUNS}/{run.pk}"), 401, "UNAUTHORIZED")
