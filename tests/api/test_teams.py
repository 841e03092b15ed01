"""Teams over REST: `"team": true` on a task, the team fields of a run, a run's tree
(GET /runs/{id}/tree) and its messages (GET /runs/{id}/messages), each its owner's only."""

import pytest

from agents_app.models import AgentMessage, Run, Task
from tests.support.api import assert_error, submit
from tests.support.runs import make_run, to_status
from tests.support.teams import child_succeeds, start_team

RUNS = "/api/v1/runs"

pytestmark = pytest.mark.usefixtures("queued_runs")


@pytest.fixture
def team(owner, seeded_profiles):
    """A head node with research (succeeded), builder and synthesis children."""
    head, children = start_team(
        owner,
        [
            ("Research the existing parsers", seeded_profiles["research_agent"]),
            ("Implement the parser in parser.py", seeded_profiles["builder_agent"]),
            ("Review the parser for bugs", seeded_profiles["synthesis_agent"]),
        ],
    )
    child_succeeds(children[0], "Three parsers exist.", prompt_tokens=120)
    return head, children


# --- "team": true ----------------------------------------------------------------------------


def test_a_task_with_team_true_is_done_by_a_head_node(owner_api, llm_configured, seeded_profiles):
    response = submit(owner_api, team=True)

    assert response.status_code == 202, response.content
    assert Task.objects.get().team is True
    run = owner_api.get(f"{RUNS}/{response.json()['run_id']}").json()
    assert (run["kind"], run["profile"], run["depth"]) == ("team", "head_node", 0)
    assert (run["parent_id"], run["root_id"], run["envelope"]) == (None, None, None)


@pytest.mark.parametrize(("sent", "kept"), [({}, "cancel"), ({"close_policy": "finish"}, "finish")])
def test_a_team_is_submitted_with_its_close_policy(
    owner_api, llm_configured, seeded_profiles, sent, kept
):
    response = submit(owner_api, team=True, **sent)

    assert response.status_code == 202, response.content
    run = owner_api.get(f"{RUNS}/{response.json()['run_id']}").json()
    assert run["close_policy"] == kept
    assert Run.objects.get().close_policy == kept


@pytest.mark.parametrize("value", ["wait", "", 1, True, [], {}])
def test_a_close_policy_not_offered_is_refused(owner_api, llm_configured, value):
    error = assert_error(submit(owner_api, team=True, close_policy=value), 400, "VALIDATION_ERROR")

    assert error["details"]["errors"][0]["field"] == "close_policy"
    assert not Task.objects.exists() and not Run.objects.exists()


def test_a_task_without_team_is_done_by_one_agent(owner_api, llm_configured):
    response = submit(owner_api)

    assert response.status_code == 202
    assert Task.objects.get().team is False
    run = owner_api.get(f"{RUNS}/{response.json()['run_id']}").json()
    assert (run["kind"], run["profile"]) == ("task", None)


@pytest.mark.parametrize("value", ["yes", 1, 0, "true", None, [], {}])
def test_a_team_that_is_no_boolean_is_refused(owner_api, llm_configured, value):
    error = assert_error(submit(owner_api, team=value), 400, "VALIDATION_ERROR")

    assert error["details"]["errors"][0]["field"] == "team"
    assert not Task.objects.exists() and not Run.objects.exists()


def test_the_openapi_document_offers_team_and_the_tree(client):
    document = client.get("/api/openapi.json").json()

    task = document["components"]["schemas"]["TaskIn"]["properties"]["team"]
    assert task["type"] == "boolean" and task["default"] is False
    assert {"/api/v1/runs/{run_id}/tree", "/api/v1/runs/{run_id}/messages"} <= set(
        document["paths"]
    )
    summary = document["components"]["schemas"]["RunSummary"]["properties"]
    assert {"kind", "parent_id", "root_id", "depth", "profile", "envelope"} <= set(summary)


# --- a run's team fields ---------------------------------------------------------------------


def test_a_child_shows_its_place_profile_and_envelope(owner_api, team):
    head, (research, builder, _) = team

    ended = owner_api.get(f"{RUNS}/{research.pk}").json()
    working = owner_api.get(f"{RUNS}/{builder.pk}").json()

    assert (ended["kind"], ended["parent_id"], ended["root_id"], ended["depth"]) == (
        "child",
        head.pk,
        head.pk,
        1,
    )
    assert ended["profile"] == "research_agent"
    assert ended["envelope"]["summary"] == "Three parsers exist."
    assert ended["envelope"]["status"] == "succeeded"
    assert working["envelope"] is None and working["profile"] == "builder_agent"
    listed = owner_api.get(RUNS).json()["results"]
    assert {r["id"]: r["profile"] for r in listed}[builder.pk] == "builder_agent"


# --- GET /runs/{id}/tree -----------------------------------------------------------------------


@pytest.mark.dialect
def test_the_tree_lists_the_head_node_then_its_children_in_subtask_order(owner_api, team):
    head, children = team

    body = owner_api.get(f"{RUNS}/{head.pk}/tree").json()

    assert body["success"] is True
    assert (body["run_id"], body["root_id"]) == (head.pk, head.pk)
    runs = body["runs"]
    assert [(r["id"], r["kind"], r["profile"], r["depth"]) for r in runs] == [
        (head.pk, "team", "head_node", 0),
        (children[0].pk, "child", "research_agent", 1),
        (children[1].pk, "child", "builder_agent", 1),
        (children[2].pk, "child", "synthesis_agent", 1),
    ]
    assert [r["step_index"] for r in runs] == [None, 0, 1, 2]
    assert [r["parent_id"] for r in runs] == [None, head.pk, head.pk, head.pk]
    assert [r["status"] for r in runs] == ["waiting_children", "succeeded", "queued", "queued"]
    research = runs[1]
    assert research["subtask"] == "Research the existing parsers"
    assert research["usage"]["prompt_tokens"] == 120
    assert research["link"] == f"{RUNS}/{children[0].pk}"
    assert research["started_at"] and research["finished_at"] and research["created_at"]


def test_a_child_answers_with_its_whole_tree(owner_api, team):
    head, children = team

    from_child = owner_api.get(f"{RUNS}/{children[2].pk}/tree").json()

    assert (from_child["run_id"], from_child["root_id"]) == (children[2].pk, head.pk)
    assert [r["id"] for r in from_child["runs"]] == [head.pk, *(c.pk for c in children)]


@pytest.mark.dialect
def test_a_grandchild_comes_right_after_its_parent(owner, owner_api, seeded_profiles, team):
    head, children = team
    middle = children[1]
    to_status(middle, "planning", "running")
    _, grandchildren = start_team(owner, [("Write the tests", seeded_profiles["builder_agent"])])
    # Hang the new child under `middle`, as a child that delegated would.
    Run.objects.filter(pk=grandchildren[0].pk).update(parent=middle, root=head, depth=2)

    runs = owner_api.get(f"{RUNS}/{head.pk}/tree").json()["runs"]

    assert [(r["id"], r["depth"]) for r in runs] == [
        (head.pk, 0),
        (children[0].pk, 1),
        (middle.pk, 1),
        (grandchildren[0].pk, 2),
        (children[2].pk, 1),
    ]


def test_a_run_in_no_tree_is_a_tree_of_one(owner, owner_api):
    run = make_run(owner)

    body = owner_api.get(f"{RUNS}/{run.pk}/tree").json()

    assert body["root_id"] == run.pk
    assert [(r["id"], r["kind"], r["parent_id"]) for r in body["runs"]] == [(run.pk, "task", None)]


@pytest.mark.dialect
def test_the_tree_is_read_in_a_fixed_number_of_queries(
    owner, owner_api, team, seeded_profiles, django_assert_max_num_queries
):
    head, _ = team
    owner_api.get(f"{RUNS}/{head.pk}/tree")  # the key's last_used_at is written on first use

    # the key, the run asked about, the tree with its tasks, profiles and steps
    with django_assert_max_num_queries(3):
        response = owner_api.get(f"{RUNS}/{head.pk}/tree")

    assert response.status_code == 200 and len(response.json()["runs"]) == 4


def test_another_users_tree_is_not_found_like_a_missing_one(outsider_api, team):
    head, children = team

    theirs = assert_error(outsider_api.get(f"{RUNS}/{children[0].pk}/tree"), 404, "NOT_FOUND")
    absent = assert_error(outsider_api.get(f"{RUNS}/{head.pk + 1000}/tree"), 404, "NOT_FOUND")

    assert theirs["details"] == {"run_id": children[0].pk}
    assert absent["details"] == {"run_id": head.pk + 1000}


# --- GET /runs/{id}/messages -------------------------------------------------------------------


@pytest.mark.dialect
def test_the_messages_are_the_trees_timeline_in_order(owner_api, team):
    head, children = team
    stored = list(AgentMessage.objects.filter(root=head).order_by("pk"))

    body = owner_api.get(f"{RUNS}/{children[1].pk}/messages").json()

    assert (body["success"], body["count"], body["page"]) == (True, len(stored), 1)
    results = body["results"]
    assert [m["id"] for m in results] == [m.pk for m in stored]
    assert all(m["root_id"] == head.pk for m in results)
    assigned = [m for m in results if m["type"] == "task_assignment"]
    assert [(m["from_agent"], m["to_agent"]) for m in assigned] == [
        ("head_node (head)", "research_agent"),
        ("head_node (head)", "builder_agent"),
        ("head_node (head)", "synthesis_agent"),
    ]
    assert assigned[0]["payload"]["subtask"] == "Research the existing parsers"
    (result,) = [m for m in results if m["type"] == "task_result"]
    assert (result["from_agent"], result["to_agent"]) == ("research_agent", "head_node (head)")
    assert result["payload"]["summary"] == "Three parsers exist."
    assert (result["sender_id"], result["recipient_id"]) == (children[0].pk, head.pk)
    assert result["correlation_id"] == assigned[0]["correlation_id"]
    assert results.index(result) > results.index(assigned[2])


@pytest.mark.dialect
def test_the_messages_come_in_pages(owner_api, team):
    head, _ = team

    stored = list(
        AgentMessage.objects.filter(root=head).order_by("pk").values_list("pk", flat=True)
    )
    assert len(stored) > 3

    first = owner_api.get(f"{RUNS}/{head.pk}/messages?page_size=3").json()
    rest = owner_api.get(f"{RUNS}/{head.pk}/messages?page_size=3&page=2").json()

    assert (first["count"], first["page_size"], rest["page"]) == (len(stored), 3, 2)
    assert [m["id"] for m in first["results"]] == stored[:3]
    assert [m["id"] for m in rest["results"]] == stored[3:6]


def test_a_run_in_no_tree_has_no_messages(owner, owner_api):
    body = owner_api.get(f"{RUNS}/{make_run(owner).pk}/messages").json()

    assert (body["count"], body["results"]) == (0, [])


@pytest.mark.parametrize(
    ("query", "field"),
    [("page=0", "page"), ("page_size=0", "page_size"), ("page_size=101", "page_size")]
    + [("page=x", "page")],
)
def test_a_bad_page_of_messages_is_refused(owner_api, team, query, field):
    head, _ = team

    error = assert_error(
        owner_api.get(f"{RUNS}/{head.pk}/messages?{query}"), 400, "VALIDATION_ERROR"
    )

    assert error["details"]["errors"][0]["field"] == field


def test_another_users_messages_are_not_found_like_a_missing_one(outsider_api, team):
    head, _ = team

    error = assert_error(outsider_api.get(f"{RUNS}/{head.pk}/messages"), 404, "NOT_FOUND")

    assert error["details"] == {"run_id": head.pk}
