"""A head node parked with a subtask waiting for a profile's place (no child of its own
working) is woken by the end of a run that held such a place: a child's or a micro agent's,
never a head node's, which runs as the orchestrator and holds none."""

import pytest

from agents_app.core.errors import ErrorCode
from agents_app.models import RunStatus
from agents_app.runs.lifecycle import finish
from agents_app.runs.writer import locked_run
from tests.support.runs import add_plan, to_status
from tests.support.teams import child_succeeds, make_head, start_team

pytestmark = pytest.mark.django_db(transaction=True)


def parked_for_a_profile(owner):
    """A head node waiting with no child working: its subtask waits for a profile's place."""
    head = make_head(owner, "Review the parser once a reviewer is free")
    add_plan(head, ["Review the parser for bugs"])
    return to_status(head, RunStatus.WAITING_CHILDREN)


def test_a_childs_end_wakes_a_head_node_waiting_for_a_profiles_place(
    owner, seeded_profiles, queued_runs
):
    waiting = parked_for_a_profile(owner)
    _, (child,) = start_team(
        owner, [("Research the existing parsers", seeded_profiles["research_agent"])]
    )
    queued_runs.clear()

    child_succeeds(child, "Three parsers exist.")

    waiting.refresh_from_db()
    assert waiting.status == RunStatus.RUNNING
    assert waiting.pk in queued_runs


def test_a_head_nodes_end_wakes_no_head_node_waiting_for_a_profiles_place(
    owner, seeded_profiles, queued_runs
):
    waiting = parked_for_a_profile(owner)
    other = make_head(owner, "Implement the parser")
    assert other.profile is not None  # the orchestrator's: it holds no place of a profile
    to_status(other, RunStatus.PLANNING)
    queued_runs.clear()

    with locked_run(other.pk) as w:
        finish(w, RunStatus.FAILED, ErrorCode.PLANNING_FAILED, "The plan could not be made")

    waiting.refresh_from_db()
    assert waiting.status == RunStatus.WAITING_CHILDREN
    assert queued_runs == []
