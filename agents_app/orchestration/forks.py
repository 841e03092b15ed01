"""A fork of a team's head node (issue 36, item 3; the head node's recipe answers runs.forks).

A head node's steps are done by its children, which write the team's one workspace; the head
node itself calls no tool, so its own journal is empty. After step N, then, means after the
child that did step N ended, and a fork is possible there only if no child was at work then:
none of a later step had been started, none started before had not ended (else 409: its work
is mixed into the files, or cut in the middle). The children of steps up to N come with the
fork, copied as ended children of it (their plans, steps, calls and journals, and their
envelopes, which the fork's end and its Team panel read), and the fork's workspace is the
team's as every run of the tree created before that point left it (those children, any micro
agents they started, the children of earlier plan versions; never one of a newer plan
version, started afterwards). The fork then delegates steps N+1.. as any head node does.

Not copied: the copied children's own events and messages (their pages show their plan and
results, the Team panel's timeline starts with the fork's own children), and the micro agents
a child started (their files are in the workspace all the same)."""

from typing import Any

from django.db.models import Q

from agents_app.core import rows
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.models import Plan, Run, Step, WorkspaceChange
from agents_app.runs.forks import (
    Copies,
    ForkPoint,
    copy_journal,
    copy_plan,
    in_flight,
    journal_stopped,
)

# The fields of a child copied as they are onto its copy (the tree it belongs to aside).
COPIED_CHILD_FIELDS = (
    "task_id",
    "owner_id",
    "kind",
    "depth",
    "profile_id",
    "close_policy",
    "attempt",
    "status",
    "replans",
    "final_response",
    "error_code",
    "error_message",
    "error_cause",
    "prompt_tokens",
    "completion_tokens",
    "tool_calls_made",
    "max_tokens",
    "max_tool_calls",
    "connection_id",
    "llm_model",
    "phase_models",
    "created_at",
    "started_at",
    "finished_at",
)


def _children_of(source: Run, steps: list[Step]) -> list[Run]:
    return list(Run.objects.filter(parent=source, parent_step__in=steps).order_by("pk"))


def team_fork_point(source: Run, plan: Plan, steps: list[Step], number: int) -> ForkPoint:
    """The team's workspace after the child that did step `number` ended (`at`): every change
    of the tree's runs created before then, in the order made (a child of a later step, or of
    a newer plan version, started afterwards, and what it started, are left out). CONFLICT when
    no child did the step, one of them still works, a child of a later step was started before
    `at`, a kept run ended after it (it was at work then), or a journal it needs stopped
    early."""
    kept, later = steps[:number], steps[number:]
    children = _children_of(source, kept)
    ended = [c.finished_at for c in children if c.parent_step_id == kept[-1].pk and c.finished_at]
    if not ended:
        raise DomainError(
            ErrorCode.CONFLICT,
            f"Step {number} was done by no child: there is no point after it to fork from",
            {"after_step": number},
        )
    if working := [c.pk for c in children if not c.is_terminal]:
        raise DomainError(
            ErrorCode.CONFLICT,
            f"Child run {working[0]} of step {number} or before works still",
            {"after_step": number, "working": working},
        )
    at = max(ended)
    started = Run.objects.filter(parent=source, parent_step__in=later, created_at__lt=at)
    if flying := sorted({c.parent_step.index + 1 for c in started.select_related("parent_step")}):
        raise in_flight(number, flying)
    # Every run of the tree created before that point (whichever plan version it served), and
    # the children of the steps up to it; none of them may have been at work then.
    tree = list(
        Run.objects.filter(
            Q(pk=source.pk)
            | Q(root_id=source.pk, created_at__lt=at)
            | Q(parent=source, parent_step__in=kept)
        )
        .order_by("pk")
        .only("pk", "journaled", "journal_complete_until", "finished_at", "parent_step_id")
    )
    _none_at_work(source, plan, [r for r in tree if r.pk != source.pk], at, number)
    for run in tree:
        if not run.journaled or run.journal_complete_until is not None:
            raise journal_stopped(run, number)
    changes = WorkspaceChange.objects.filter(run__in=[r.pk for r in tree]).order_by(
        "created_at", "run_id", "seq"
    )
    return ForkPoint(changes=list(changes))


def _none_at_work(source: Run, plan: Plan, kept: list[Run], at: Any, number: int) -> None:
    """CONFLICT when a run the fork keeps had not ended at `at`: its files are cut in the
    middle. A child of one of the plan's steps is named by its step, another by its id."""
    flying = [r for r in kept if r.finished_at is None or r.finished_at > at]
    if not flying:
        return
    steps = dict(Step.objects.filter(plan=plan).values_list("pk", "index"))
    numbers = sorted({steps[r.parent_step_id] + 1 for r in flying if r.parent_step_id in steps})
    if numbers and len(numbers) == len(flying):
        raise in_flight(number, numbers)
    others = [r.pk for r in flying if r.parent_step_id not in steps]
    raise DomainError(
        ErrorCode.CONFLICT,
        f"Run {others[0]} of run {source.pk}'s team was still at work when step {number} "
        f"ended: what the team was after step {number} alone was never there to fork from",
        {"after_step": number, "in_flight": numbers, "in_flight_runs": others},
    )


def team_fork_raw(raw: dict[str, Any], number: int, edited: list[str]) -> dict[str, Any]:
    """A head node's plan raw with its subtasks after `number` replaced by `edited` ones,
    which name no profile and depend on none: the matrix assigns them as they start."""
    raw = dict(raw)
    kept = list(raw.get("subtasks") or [])[:number]
    raw["subtasks"] = kept + [
        {"description": o, "depends_on": [], "preferred_profile": "", "micro": None} for o in edited
    ]
    return raw


def copy_children(source: Run, fork: Run, copies: Copies, number: int) -> dict[str, Any]:
    """The children of the source's steps up to `number`, copied as ended children of `fork`
    (the step each did is the fork's copy of it), with their plans, calls, journals and
    envelopes. Returns the fork's fields: its shared context as those children left it."""
    children = list(
        Run.objects.filter(parent=source, parent_step_id__in=list(copies.steps)).order_by("pk")
    )
    prefix = f"{source.tree_root_id}:{source.pk}:"
    artifacts: list[str] = []
    for child in children:
        copy = Run(
            **{f: getattr(child, f) for f in COPIED_CHILD_FIELDS},
            parent=fork,
            parent_step_id=copies.steps[child.parent_step_id],
            root_id=fork.pk,
            delegation=f"{fork.pk}:{fork.pk}:{child.delegation.removeprefix(prefix)}",
        )
        rows.insert([copy], ids=True)
        plan = Plan.objects.filter(run=child).order_by("-version").first()
        steps = list(Step.objects.filter(plan=plan).order_by("index")) if plan else []
        copied = (
            copy_plan(copy, plan, steps, len(steps), None) if plan else Copies(steps={}, calls={})
        )
        changes = list(WorkspaceChange.objects.filter(run=child).order_by("seq"))
        journal_seq, journal_bytes = copy_journal(copy, changes, copied)
        envelope = dict(child.envelope) if child.envelope else None
        if envelope is not None:
            envelope["run_id"] = copy.pk
            envelope["evidence_step_ids"] = [
                copied.steps.get(pk, pk) for pk in envelope.get("evidence_step_ids") or []
            ]
            artifacts += [a for a in envelope.get("artifacts") or [] if a not in artifacts]
        Run.objects.filter(pk=copy.pk).update(
            envelope=envelope, journal_seq=journal_seq, journal_bytes=journal_bytes
        )
    return {"shared": _shared_up_to(source.shared or {}, number, artifacts)}


def _shared_up_to(shared: dict[str, Any], number: int, artifacts: list[str]) -> dict[str, Any]:
    """The head node's shared context as its children of steps up to `number` (index below
    it) left it: their decisions and results, the files they wrote."""
    kept: dict[str, Any] = {}
    decisions = [
        d
        for d in shared.get("decisions") or []
        if isinstance(d.get("subtask"), int) and d["subtask"] < number
    ]
    if decisions:
        kept["decisions"] = decisions
    results = {
        k: v
        for k, v in (shared.get("intermediate_results") or {}).items()
        if k.isdigit() and int(k) < number
    }
    if results:
        kept["intermediate_results"] = results
    if artifacts:
        kept["artifacts"] = artifacts
    return kept
