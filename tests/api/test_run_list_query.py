"""GET /api/v1/runs?q=…&status=…&sort=…: the dashboard's search, status groups and orders over
REST, with the same meaning; anything else is a 400 naming the parameter."""

from datetime import timedelta

import pytest
from django.utils import timezone

from agents_app.models import Run, RunStatus
from tests.support.api import assert_error
from tests.support.runs import make_run

RUNS = "/api/v1/runs"
START = timezone.now() - timedelta(days=1)


def shaped(owner, text, *, minute=0, status=None, seconds=None, tokens=0, finished=True):
    """A run created `minute` minutes after START, in `status`, started then (unless `seconds`
    is None) and finished `seconds` later (or still going, `finished=False`), with `tokens`."""
    run = make_run(owner, text)
    fields = {"created_at": START + timedelta(minutes=minute), "completion_tokens": tokens}
    if status:
        fields["status"] = status
    if seconds is not None:
        fields["started_at"] = fields["created_at"]
        if finished:
            fields["finished_at"] = fields["started_at"] + timedelta(seconds=seconds)
        else:  # still going: it started `seconds` ago
            fields["started_at"] = timezone.now() - timedelta(seconds=seconds)
    Run.objects.filter(pk=run.pk).update(**fields)
    return run


def listed(client, **query) -> list[int]:
    response = client.get(RUNS, query)
    assert response.status_code == 200, response.content
    body = response.json()
    return [run["id"] for run in body["results"]]


@pytest.mark.dialect
def test_q_keeps_the_runs_whose_task_contains_it_in_any_case(owner, owner_api):
    wanted = make_run(owner, "Download the INVOICES")
    make_run(owner, "Write the report")

    assert listed(owner_api, q="invoices") == [wanted.pk]
    assert listed(owner_api, q="  ") == listed(owner_api)


@pytest.mark.dialect
def test_status_takes_a_group_or_a_single_status(owner, owner_api):
    queued = shaped(owner, "a", minute=3)
    waiting = shaped(owner, "b", minute=2, status=RunStatus.WAITING_APPROVAL)
    paused = shaped(owner, "c", minute=1, status=RunStatus.PAUSED)
    failed = shaped(owner, "d", minute=0, status=RunStatus.FAILED)

    assert listed(owner_api, status="active") == [queued.pk]
    assert listed(owner_api, status="waiting") == [waiting.pk, paused.pk]
    assert listed(owner_api, status="waiting_approval") == [waiting.pk]
    assert listed(owner_api, status="failed") == [failed.pk]


@pytest.mark.dialect
@pytest.mark.parametrize(
    "sort, expected",
    [
        ("newest", ["going", "short", "long", "idle"]),
        ("oldest", ["idle", "long", "short", "going"]),
        ("longest", ["going", "long", "short", "idle"]),
        ("shortest", ["short", "long", "going", "idle"]),
        ("most_tokens", ["short", "long", "going", "idle"]),
        ("fewest_tokens", ["idle", "going", "long", "short"]),
    ],
)
def test_each_sort_orders_the_list(owner, owner_api, sort, expected):
    made = {
        "idle": shaped(owner, "idle", minute=0),
        "long": shaped(owner, "long", minute=1, seconds=600, tokens=50),
        "short": shaped(owner, "short", minute=2, seconds=2, tokens=70),
        # Still going for an hour: longer than any finished run so far.
        "going": shaped(owner, "going", minute=3, seconds=3600, tokens=10, finished=False),
    }

    assert listed(owner_api, sort=sort) == [made[name].pk for name in expected]


@pytest.mark.dialect
def test_a_sort_pages_without_repeating_or_missing_runs_that_tie(owner, owner_api):
    runs = [shaped(owner, f"Task {n}", minute=0, tokens=5).pk for n in range(7)]

    pages = [listed(owner_api, sort="most_tokens", page=page, page_size=3) for page in (1, 2, 3)]

    assert sorted(sum(pages, [])) == sorted(runs)


@pytest.mark.dialect
def test_q_status_and_sort_combine_and_count_what_they_keep(owner, owner_api):
    shaped(owner, "Fetch invoices", status=RunStatus.SUCCEEDED)
    small = shaped(owner, "Fetch invoices again", status=RunStatus.FAILED, tokens=1)
    big = shaped(owner, "Fetch more invoices", status=RunStatus.FAILED, tokens=9)
    shaped(owner, "Write the report", status=RunStatus.FAILED)

    body = owner_api.get(RUNS, {"q": "invoices", "status": "failed", "sort": "most_tokens"}).json()

    assert [r["id"] for r in body["results"]] == [big.pk, small.pk]
    assert body["count"] == 2


@pytest.mark.dialect
def test_the_list_searches_only_the_callers_runs(owner, outsider, owner_api, staff, staff_api):
    mine = make_run(owner, "Fetch invoices")
    make_run(outsider, "Fetch invoices")
    staffs = make_run(staff, "Fetch invoices")

    assert listed(owner_api, q="invoices", sort="longest") == [mine.pk]
    assert listed(staff_api, q="invoices") == [staffs.pk]


@pytest.mark.dialect
def test_a_page_past_the_end_is_empty_with_the_count(owner, owner_api):
    make_run(owner, "Only one")

    body = owner_api.get(RUNS, {"q": "only", "page": 5}).json()

    assert body["results"] == [] and body["count"] == 1 and body["page"] == 5


@pytest.mark.parametrize(
    "query, field",
    [
        ({"status": "bogus"}, "status"),
        ({"status": "ACTIVE"}, "status"),
        ({"sort": "sideways"}, "sort"),
        ({"sort": "-created_at"}, "sort"),
        ({"q": "x" * 201}, "q"),
        ({"q": "a\x00b"}, "q"),
        ({"q": "report", "page": "junk"}, "page"),
        ({"sort": "longest", "page": 0}, "page"),
    ],
)
def test_junk_query_values_are_a_400_naming_the_parameter(owner, owner_api, query, field):
    make_run(owner)

    error = assert_error(owner_api.get(RUNS, query), 400, "VALIDATION_ERROR")

    assert [e["field"] for e in error["details"]["errors"]] == [field]


@pytest.mark.dialect
def test_a_searched_sorted_page_of_runs_costs_three_queries(
    owner, owner_api, django_assert_num_queries
):
    for n in range(30):
        shaped(owner, f"Task {n}", minute=n, seconds=n, tokens=n, status=RunStatus.RUNNING)
    owner_api.get(RUNS)  # the key's last_used_at is written on first use only

    # the key with its user, the count, the page of runs with their tasks
    with django_assert_num_queries(3):
        response = owner_api.get(
            RUNS, {"q": "task", "status": "active", "sort": "longest", "page_size": 25}
        )

    assert len(response.json()["results"]) == 25


def test_the_openapi_document_describes_q_status_and_sort(client):
    operation = client.get("/api/openapi.json").json()["paths"]["/api/v1/runs"]["get"]
    parameters = {p["name"]: p for p in operation["parameters"]}

    assert parameters["q"]["schema"]["maxLength"] == 200
    status = str(parameters["status"]["schema"])
    assert "active" in status and "waiting" in status and "waiting_approval" in status
    assert "most_tokens" in str(parameters["sort"]["schema"])
    assert "400" in operation["responses"]


def of_kind(owner, text, kind):
    run = make_run(owner, text)
    Run.objects.filter(pk=run.pk).update(kind=kind)
    return run


@pytest.mark.dialect
def test_kind_filters_by_one_kind_or_the_listed_ones_and_unset_is_every_kind(owner, owner_api):
    task = of_kind(owner, "A task", "task")
    chat = of_kind(owner, "A chat message", "chat")
    team = of_kind(owner, "A team's task", "team")
    child = of_kind(owner, "A subtask", "child")

    # Unset, as before the filter existed: every kind.
    assert set(listed(owner_api)) == {task.pk, chat.pk, team.pk, child.pk}
    assert listed(owner_api, kind="chat") == [chat.pk]
    assert set(listed(owner_api, kind="listed")) == {task.pk, team.pk}
    assert listed(owner_api, kind="child", q="subtask") == [child.pk]
    assert listed(owner_api, kind="child", q="chat") == []


@pytest.mark.parametrize("kind", ["bogus", "CHAT", "all"])
def test_an_unknown_kind_is_a_400_naming_it(owner_api, kind):
    error = assert_error(owner_api.get(RUNS, {"kind": kind}), 400, "VALIDATION_ERROR")

    assert [e["field"] for e in error["details"]["errors"]] == ["kind"]
