"""Forking a team's head node (issue 36, item 3): after a step whose child ended before any
child of a later step started, the fork comes with the children of the steps up to it (ended,
with their envelopes) and the team's files as they left them, and delegates the rest as any
head node does; where a later child was already at work it is a conflict."""

from datetime import timedelta

import pytest

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.models import Plan, Run, RunKind, RunStatus, Step
from agents_app.orchestration.children import spawn_child
from agents_app.runs.files import workspace_dir
from agents_app.runs.forks import run_fork
from agents_app.runs.journal import WorkspaceJournal, changes_write
from agents_app.runs.lifecycle import finish
from agents_app.runs.writer import locked_run
from agents_app.worker.execution import execute_run
from tests.support.runs import add_plan, to_status
from tests.support.scripted_provider import ScriptedProvider
from tests.support.teams import child_succeeds, make_head
from tests.support.tools import make_registry
from tests.support.workspaces import own_workspaces, write_files

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("own_workspaces", "queued_runs"),
]
__all__ = ["own_workspaces"]


def delegated(head: Run, step: Step, profile) -> Run:
    with locked_run(head.pk) as w:
        return spawn_child(
            w, step, kind=RunKind.CHILD, text=step.objective, context={}, profile=profile
        )


def writes(child: Run, files: dict[str, str]) -> None:
    """The child writes `files` into the team's workspace, and its journal records them."""
    write_files(child, files)
    pending: list = []
    WorkspaceJournal(child).before_call(
        workspace=workspace_dir(child), step_id=None, pending=pending
    )
    with locked_run(child.pk) as w:
        changes_write(pending, w)


def finished_team(
    owner, profile, *, overlapping: bool = False, first_ends_last: bool = False, replan: str = ""
) -> tuple[Run, list[Run]]:
    """A succeeded head node of two subtasks, each done by one child that wrote notes.txt; the
    second child started after the first ended, or (`overlapping`) before, or (`first_ends_last`)
    started and ended while the first worked. `replan`: then plan v2's one subtask, done by a
    child that writes it into notes.txt."""
    head = make_head(owner)
    subtasks = ["Research the parsers", "Build the parser"]
    plan = add_plan(head, subtasks)
    # Its raw as the head node's planner writes it (orchestration.head_node.plan_team).
    Plan.objects.filter(pk=plan.pk).update(
        raw={
            "team": True,
            "subtasks": [
                {"description": d, "depends_on": [], "preferred_profile": "", "micro": None}
                for d in subtasks
            ],
        }
    )
    first_step, second_step = Step.objects.filter(plan=plan).order_by("index")
    first = delegated(head, first_step, profile)
    second = delegated(head, second_step, profile) if overlapping or first_ends_last else None
    if not first_ends_last:
        writes(first, {"notes.txt": "found by research"})
        first = child_succeeds(first, "researched")
    second = second or delegated(head, second_step, profile)
    writes(second, {"notes.txt": "changed by build"})
    second = child_succeeds(second, "built")
    if first_ends_last:
        writes(first, {"notes.txt": "found by research"})
        first = child_succeeds(first, "researched")
    if replan:
        newer = Plan.objects.create(run=head, version=2, raw={"team": True, "subtasks": []})
        step = Step.objects.create(plan=newer, run=head, index=0, objective=replan)
        fixer = delegated(head, step, profile)
        writes(fixer, {"notes.txt": replan})
        child_succeeds(fixer, "fixed")
    head.refresh_from_db()
    to_status(head, RunStatus.VERIFYING)
    with locked_run(head.pk) as w:
        finish(w, RunStatus.SUCCEEDED)
    head.refresh_from_db()
    return head, [first, second]


def test_a_forked_head_node_keeps_step_1s_child_and_files_and_delegates_step_2(
    owner, seeded_profiles
):
    head, (first, second) = finished_team(owner, seeded_profiles["research_agent"])
    assert (workspace_dir(head) / "notes.txt").read_text() == "changed by build"

    fork = run_fork(user=owner, run_id=head.pk, after_step=1, actor=owner, interface="api")

    (copied,) = Run.objects.filter(parent=fork)
    fork_steps = list(Step.objects.filter(run=fork).order_by("index"))
    assert (copied.status, copied.kind, copied.root_id) == ("succeeded", "child", fork.pk)
    assert copied.parent_step_id == fork_steps[0].pk
    assert copied.envelope["run_id"] == copied.pk
    assert copied.envelope["summary"] == first.envelope["summary"]
    assert (workspace_dir(fork) / "notes.txt").read_text() == "found by research"
    assert fork.shared["intermediate_results"] == {
        "0": {"child_run_id": first.pk, "summary": "researched"}
    }
    assert [s.status for s in fork_steps] == ["completed", "pending"]

    provider = ScriptedProvider([])
    execute_run(fork.pk, provider=provider, registry=make_registry())

    fork.refresh_from_db()
    assert provider.requests == []  # no plan asked for: it was written with the fork
    assert fork.status == RunStatus.WAITING_CHILDREN
    new = Run.objects.filter(parent=fork).exclude(pk=copied.pk).get()
    assert new.parent_step_id == fork_steps[1].pk and new.status == RunStatus.QUEUED
    # The new child starts from the copied child's result, as a dependent subtask does.
    (needed,) = new.task.context["depends_on"]
    assert needed["child_run_id"] == copied.pk and needed["summary"] == "researched"
    assert Run.objects.filter(parent=head).count() == 2  # the source's tree is untouched


def test_a_forked_head_nodes_remaining_subtasks_may_be_edited(owner, seeded_profiles):
    head, _ = finished_team(owner, seeded_profiles["research_agent"])

    fork = run_fork(
        user=owner,
        run_id=head.pk,
        after_step=1,
        steps=["Review the parser", "Write it up"],
        actor=owner,
        interface="api",
    )

    plan = Plan.objects.get(run=fork)
    assert [s["description"] for s in plan.raw["subtasks"]] == [
        "Research the parsers",
        "Review the parser",
        "Write it up",
    ]
    assert list(
        Step.objects.filter(run=fork).order_by("index").values_list("objective", "status")
    ) == [
        ("Research the parsers", "completed"),
        ("Review the parser", "pending"),
        ("Write it up", "pending"),
    ]


def test_a_head_node_whose_later_child_was_already_at_work_is_not_forked_there(
    owner, seeded_profiles
):
    head, _ = finished_team(owner, seeded_profiles["research_agent"], overlapping=True)

    with pytest.raises(DomainError) as refused:
        run_fork(user=owner, run_id=head.pk, after_step=1, actor=owner, interface="api")

    assert refused.value.code == ErrorCode.CONFLICT
    assert refused.value.details["in_flight"] == [2]
    assert Run.objects.filter(origin="fork").count() == 0


def test_a_child_is_not_forked_on_its_own(owner, seeded_profiles):
    head, (first, _) = finished_team(owner, seeded_profiles["research_agent"])

    with pytest.raises(DomainError) as refused:
        run_fork(user=owner, run_id=first.pk, after_step=1, actor=owner, interface="api")

    assert refused.value.code == ErrorCode.CONFLICT
    assert "not forked on its own" in refused.value.message


def test_a_head_node_forked_after_a_step_of_an_older_plan_leaves_out_the_newer_plans_children(
    owner, seeded_profiles
):
    head, _ = finished_team(owner, seeded_profiles["research_agent"], replan="fixed by v2")
    assert (workspace_dir(head) / "notes.txt").read_text() == "fixed by v2"

    fork = run_fork(
        user=owner, run_id=head.pk, after_step=1, plan_version=1, actor=owner, interface="api"
    )

    # The files as step 1's child left them: v2's child started afterwards.
    assert (workspace_dir(fork) / "notes.txt").read_text() == "found by research"
    assert fork.origin_plan_version == 1


def test_a_head_node_whose_earlier_child_was_still_at_work_is_not_forked_there(
    owner, seeded_profiles
):
    head, _ = finished_team(owner, seeded_profiles["research_agent"], first_ends_last=True)

    with pytest.raises(DomainError) as refused:
        run_fork(user=owner, run_id=head.pk, after_step=2, actor=owner, interface="api")

    assert refused.value.code == ErrorCode.CONFLICT
    assert refused.value.details["in_flight"] == [1]
    assert refused.value.message.startswith("Step 1 was still at work when step 2 ended")
    assert Run.objects.filter(origin="fork").count() == 0


def test_a_head_node_whose_child_of_an_older_plan_was_still_at_work_is_not_forked_there(
    owner, seeded_profiles
):
    head, (_, second) = finished_team(owner, seeded_profiles["research_agent"], replan="fix")
    fixer = Run.objects.get(parent=head, parent_step__plan__version=2)
    # As if plan v1's second child had still worked when plan v2's first one ended.
    Run.objects.filter(pk=second.pk).update(finished_at=fixer.finished_at + timedelta(seconds=1))

    with pytest.raises(DomainError) as refused:
        run_fork(user=owner, run_id=head.pk, after_step=1, actor=owner, interface="api")

    assert refused.value.code == ErrorCode.CONFLICT
    assert refused.value.details["in_flight_runs"] == [second.pk]
    assert refused.value.message.startswith(f"Run {second.pk} of run {head.pk}'s team was still")
    assert Run.objects.filter(origin="fork").count() == 0
