"""The run page's Team panel: the tree of a head node and its children, the Messages timeline,
and a child's links up to its parent and root; on every page of the tree, none elsewhere."""

import re

import pytest

from agents_app.models import AgentMessage, Approval, RunStatus
from agents_app.web.team_panel import message_summary
from tests.support.markup import by_id, ids
from tests.support.runs import make_run, to_status
from tests.support.teams import child_succeeds, start_team

pytestmark = pytest.mark.usefixtures("queued_runs")


@pytest.fixture
def team(owner, seeded_profiles):
    """A head node with three children: research (succeeded), builder (running), synthesis
    (queued)."""
    head, children = start_team(
        owner,
        [
            ("Research the existing parsers", seeded_profiles["research_agent"]),
            ("Implement the parser in parser.py", seeded_profiles["builder_agent"]),
            ("Review the parser for bugs", seeded_profiles["synthesis_agent"]),
        ],
    )
    child_succeeds(children[0], "Three parsers exist: a, b and c.", prompt_tokens=1234)
    to_status(children[1], RunStatus.PLANNING, RunStatus.RUNNING)
    return head, children


def page(client, run) -> str:
    response = client.get(f"/runs/{run.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def test_the_head_nodes_page_shows_its_tree_with_each_runs_profile_status_and_tokens(
    owner_session, team
):
    head, children = team

    html = page(owner_session, head)

    assert "team" in ids(html)
    tree = [by_id(html, f"team-run-{r.pk}") for r in (head, *children)]
    assert [(n["data-kind"], n["data-status"]) for n in tree] == [
        ("team", "waiting_children"),
        ("child", "succeeded"),
        ("child", "running"),
        ("child", "queued"),
    ]
    assert tree[0]["aria-current"] == "page"
    for name in ("research_agent", "builder_agent", "synthesis_agent"):
        assert name in html
    assert "1,234 tokens" in html
    assert "Review the parser for bugs" in html
    for child in children:
        assert f'href="/runs/{child.pk}/"' in html


def test_the_timeline_shows_each_message_from_and_to_with_its_type_and_a_short_id(
    owner_session, team
):
    head, children = team

    html = page(owner_session, head)

    messages = list(AgentMessage.objects.filter(root=head).order_by("pk"))
    shown = [m for m in messages if f'id="team-message-{m.pk}"' in html]
    assert shown == messages
    assert html.index(f'id="team-message-{messages[0].pk}"') < html.index(
        f'id="team-message-{messages[-1].pk}"'
    )
    result = next(m for m in messages if m.type == "task_result")
    assert by_id(html, f"team-message-{result.pk}")["data-type"] == "task_result"
    assert "research_agent → head_node (head)" in html
    assert "Three parsers exist: a, b and c." in html
    assert "subtask 2: Implement the parser in parser.py" in html
    # An assignment and its result share one correlation id, shown shortened.
    assert result.correlation_id == messages[0].correlation_id
    assert f">{str(result.correlation_id)[:8]}</code>" in html


def test_a_childs_page_shows_the_same_tree_and_links_up_to_its_parent_and_root(owner_session, team):
    head, children = team

    html = page(owner_session, children[1])

    assert by_id(html, f"team-run-{children[1].pk}")["aria-current"] == "page"
    assert "aria-current" not in by_id(html, f"team-run-{head.pk}")
    assert "Subtask 2 of" in html
    assert f'class="team-root-link" href="/runs/{head.pk}/"' in html
    assert f'class="team-parent-link" href="/runs/{head.pk}/"' in html


def test_a_child_waiting_for_approval_says_so_and_links_to_its_approval(owner_session, team):
    head, children = team
    waiting = to_status(
        children[2], RunStatus.PLANNING, RunStatus.RUNNING, RunStatus.WAITING_APPROVAL
    )
    Approval.objects.create(run=waiting, owner=waiting.owner, tool="http_get", arguments={})

    html = page(owner_session, head)

    node = by_id(html, f"team-run-{waiting.pk}")
    assert node["data-status"] == "waiting_approval"
    assert f'href="/runs/{waiting.pk}/#approval"' in html
    assert "Waiting for your approval of http_get" in html


def test_a_run_in_no_tree_has_no_team_panel(owner_session, owner):
    html = page(owner_session, make_run(owner))

    assert "team" not in ids(html)
    assert "team.css" not in html


@pytest.mark.parametrize(
    ("type", "payload", "line"),
    [
        (
            "task_assignment",
            {"step_index": 1, "subtask": "Implement it"},
            "subtask 2: Implement it",
        ),
        (
            "task_result",
            {"summary": "Done.", "artifacts": ["a.py", "b.md"]},
            "Done. (files: a.py, b.md)",
        ),
        (
            "error",
            {"summary": "the model timed out", "error": {"code": "STEP_TIMEOUT"}},
            "STEP_TIMEOUT: the model timed out",
        ),
        (
            "status_response",
            {"lifecycle": "active", "was": "idle", "status": "planning"},
            "idle → active (planning)",
        ),
        (
            "context_update",
            {"intermediate_result": "0", "artifacts": ["notes.md"]},
            "subtask 1's result joins the shared context (files: notes.md)",
        ),
        ("status_request", {"asked": "progress"}, '{"asked":"progress"}'),
    ],
)
def test_each_type_of_message_reads_as_one_line(type, payload, line):
    assert message_summary(AgentMessage(type=type, payload=payload)) == line


def test_a_long_summary_is_cut_with_an_ellipsis():
    line = message_summary(AgentMessage(type="task_result", payload={"summary": "word " * 100}))

    assert len(line) == 141 and line.endswith("…")


def test_the_team_panel_names_the_head_node_each_child_by_its_profile_and_a_micro_agent(
    owner_session, owner, seeded_profiles
):
    head, (child, micro) = start_team(
        owner,
        [
            ("Research the existing parsers", seeded_profiles["research_agent"]),
            ("Check that parser.py parses one line", None),
        ],
    )

    html = page(owner_session, head)

    names = {
        int(m.group(1)): m.group(2)
        for m in re.finditer(
            r'id="team-run-(\d+)".*?<span class="team-who">([^<]*)</span>', html, re.S
        )
    }
    assert names == {head.pk: "head node", child.pk: "research_agent", micro.pk: "micro agent"}
