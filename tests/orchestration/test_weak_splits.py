"""A team from a weak or generic model (issue 32, finding 8): a split whose subtasks are
placeholders or repeats is refused with its reason and asked for once more, then one agent does
the whole task; a subtask that failed is tried again after a replan, not refused as a repeat.
The schema-only server's own answers (tests/support/schema_only.py) end the team with its
agent's error, no longer with DELEGATION_REFUSED."""

from html import unescape

import pytest

from agents_app.models import Plan, Run, RunEvent, RunStatus, Task
from agents_app.runs.services import run_create
from agents_app.worker.execution import execute_run
from tests.support.schema_only import SCHEMA_ONLY
from tests.support.script import json_reply
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import EchoTool, FinishTool, make_registry

pytestmark = pytest.mark.django_db(transaction=True)

TASK = "Research CSV libraries, implement reader.py, then review it"
WORKING = ("queued", "planning", "running", "verifying")


def team_run(owner, text: str = TASK) -> Run:
    return run_create(task=Task.objects.create(owner=owner, text=text, team=True))


def split(*descriptions: str, micro=None) -> dict:
    subtasks = [{"description": d, **({"micro": micro} if micro else {})} for d in descriptions]
    return json_reply({"pattern": "parallel", "subtasks": subtasks, "reasoning": "split"})


def deliver(run_id: int, provider: ScriptedProvider, registry=None) -> Run:
    execute_run(run_id, provider=provider, registry=registry or make_registry())
    return Run.objects.get(pk=run_id)


def drive(head: Run, provider: ScriptedProvider, registry=None) -> Run:
    """Every delivery of the tree a worker pool would make, a child first, until the head
    node ends."""
    for _ in range(60):
        head.refresh_from_db()
        if head.is_terminal:
            return head
        working = (
            Run.objects.filter(root_id=head.pk, status__in=WORKING)
            .exclude(pk=head.pk)
            .order_by("pk")
            .first()
        )
        deliver((working or head).pk, provider, registry)
    raise AssertionError(f"the team did not end: {head.status}")


def refusals(head: Run) -> list[dict]:
    return list(
        RunEvent.objects.filter(run=head, type="decomposition_refused")
        .order_by("seq")
        .values_list("payload", flat=True)
    )


def test_a_split_into_the_same_placeholder_twice_is_refused_then_one_agent_does_the_task(
    owner, owner_session, seeded_profiles, queued_runs, settings
):
    settings.AGENT_FAST_PATH_MAX_CHARS = 500
    # SmolLM2's split, given twice: eight subtasks all called "A task".
    model = ScriptedProvider(
        [
            {"match": "AGENTDESK:TEAM", "replies": [split(*["A task"] * 8)], "repeat": True},
            {"match": "AGENTDESK:DIRECT", "replies": [{"content": "reader.py is written."}]},
        ]
    )
    head = deliver(team_run(owner).pk, model)

    said = '8 of its 8 subtasks say nothing of the work ("A task" 8 times)'
    assert refusals(head) == [
        {"reason": said, "attempt": 1, "then": "split again"},
        {"reason": said, "attempt": 2, "then": "single agent"},
    ]
    # Asked once more, told why.
    splits = [r for r in model.requests if "AGENTDESK:TEAM" in r.messages[0]["content"]]
    assert (
        len(splits) == 2 and f"Your split was refused: {said}" in splits[1].messages[1]["content"]
    )
    # The plan is the whole task, one subtask, for the one agent the matrix picks.
    plan = Plan.objects.get(run=head)
    assert [s.objective for s in plan.steps.all()] == [TASK]
    assert plan.reason.startswith("The team's split was refused twice") and said in plan.reason
    (child,) = Run.objects.filter(parent=head)
    assert child.kind == "child" and child.profile is not None and child.task.text == TASK

    head = drive(head, model)
    assert head.status == RunStatus.SUCCEEDED, (head.error_code, head.error_message)
    assert "reader.py is written." in head.final_response
    assert not RunEvent.objects.filter(run=head, type="delegation_refused").exists()
    # A person reads why on the head node's page.
    html = unescape(owner_session.get(f"/runs/{head.pk}/").content.decode())
    assert "split refused (one agent does the whole task): 8 of its 8 subtasks" in html


def test_a_split_with_the_same_subtask_twice_is_refused_and_the_next_split_is_delegated(
    owner, seeded_profiles, queued_runs, settings
):
    settings.AGENT_FAST_PATH_MAX_CHARS = 500
    model = ScriptedProvider(
        [
            {
                "match": "AGENTDESK:TEAM",
                "replies": [
                    split("Research CSV libraries", "research CSV  libraries.", "Write reader.py"),
                    split("Research CSV libraries", "Implement reader.py"),
                ],
            },
        ]
    )
    head = deliver(team_run(owner).pk, model)

    assert refusals(head) == [
        {
            "reason": '2 subtasks are the same ("Research CSV libraries")',
            "attempt": 1,
            "then": "split again",
        }
    ]
    assert head.status == "waiting_children"
    children = Run.objects.filter(parent=head).order_by("parent_step__index")
    assert [c.task.text for c in children] == ["Research CSV libraries", "Implement reader.py"]


# In the PostgreSQL pass: a failure the recovery table does not cover ends `retried` early.
@pytest.mark.dialect
def test_a_subtask_that_failed_is_tried_again_after_a_replan_not_refused_as_a_repeat(
    owner, seeded_profiles, queued_runs, settings
):
    settings.AGENT_FAST_PATH_MAX_CHARS = 500
    settings.AGENT_MAX_REPLANS = 1
    model = ScriptedProvider(
        [
            {
                "match": "AGENTDESK:TEAM",
                "replies": [split("Research the CSV libraries")],
                "repeat": True,
            },
            # A failure seed 001's recovery table does not retry, then an answer.
            {
                "match": "AGENTDESK:DIRECT",
                "replies": [{"raise": "OUT_OF_MEMORY"}, {"content": "csv and pandas."}],
            },
        ]
    )
    head = drive(team_run(owner), model)

    assert head.status == RunStatus.SUCCEEDED, (head.error_code, head.error_message)
    first, second = Run.objects.filter(parent=head).order_by("pk")
    assert (first.status, first.error_code) == ("failed", "OUT_OF_MEMORY")
    assert second.status == "succeeded" and second.profile_id == first.profile_id
    assert not RunEvent.objects.filter(run=head, type="delegation_refused").exists()
    assert "csv and pandas." in head.final_response


def test_a_team_on_a_schema_only_server_ends_with_its_agents_error_not_a_refused_delegation(
    owner, seeded_profiles, queued_runs
):
    """The generic server's team of the issue: its split is one subtask "string" for a micro
    agent "string", the same on every replan. It was delegated, failed, and every replan's
    same split was refused as a repeat: "subtask 0 failed: DELEGATION_REFUSED: the same micro
    agent task was run before (run 2)"."""
    registry = make_registry(EchoTool(), FinishTool())
    head = drive(team_run(owner), ScriptedProvider(SCHEMA_ONLY), registry)

    assert (head.status, head.error_code) == ("failed", "CHILD_FAILED")
    assert "DELEGATION_REFUSED" not in head.error_message, head.error_message
    assert not RunEvent.objects.filter(run=head, type="delegation_refused").exists()
    children = list(Run.objects.filter(parent=head).order_by("pk"))
    # One agent did the whole task, tried again by seed 001's table, and no new split after;
    # the headline is its own error (the verifier a schema-only server plays says "no").
    assert {(c.kind, c.task.text) for c in children} == {("child", TASK)}
    assert Plan.objects.filter(run=head).count() == 1
    assert head.error_message.startswith(f"subtask 0 failed: {children[-1].error_code}")

    said = (
        'its one subtask says nothing of the work ("string"); '
        'a micro agent\'s persona says nothing of who it is ("string")'
    )
    assert [(r["reason"], r["then"]) for r in refusals(head)] == [
        (said, "split again"),
        (said, "single agent"),
    ]
