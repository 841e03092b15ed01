"""A fork of a run (issue 36): a new run of its source's kind and task that goes on after one of
the source's completed steps, optionally with the remaining steps edited, an extra instruction
for every later step, or another LLM connection.

The fork is no new execution path. Its plan is written when it is created: the source's steps
up to N copied (their status, output, thinking, tool calls and times: they are not run again),
the remaining ones as planned or as edited. Its workspace is rebuilt from the source's journal
as it was after step N (runs.journal_files), and the journal's rows up to there come with it,
so its own journal goes on from that state. Then it is queued like any run; the worker starts
a run whose plan was written ahead (`Run.planned_ahead`) at its first step not done, without
asking a model for a plan (worker.execution), and its later steps see the copied ones as
earlier steps, as the source's did.

Steps are numbered as the run page numbers them (step N is the plan's index N-1). Whether a
kind may be forked is its recipe's answer (`"fork" in recipe.actions`): a chat answer, a
contract attempt, a child or a micro agent is not forked on its own; where the source stood
after step N, and what else comes with its fork, is its recipe's answer too (`fork_point`,
`fork_along`: a team's head node brings its children of the steps up to N,
orchestration.forks). Only regular files are rebuilt: the journal keeps no content of a link or a special
file, so those are not recreated (the fork's `origin_options` lists them)."""

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from agents_app.connections.services import connection_for_phase
from agents_app.core import rows
from agents_app.core.audit import RUN_FORK, audit_record
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.event_payloads import PlanCreatedPayload
from agents_app.core.events import EventType
from agents_app.core.inputs import text_problem
from agents_app.engine.decide import DONE
from agents_app.models import (
    ChangeKind,
    Origin,
    Plan,
    Run,
    Step,
    StepStatus,
    ToolCall,
    WorkspaceChange,
)
from agents_app.runs.admission import admission_check, run_admit
from agents_app.runs.control import refuse_while_halted
from agents_app.runs.files import disk_path, workspace_dir
from agents_app.runs.journal import blob_path
from agents_app.runs.journal_files import journal_point
from agents_app.runs.recipes import recipe_for
from agents_app.runs.selectors import run_get
from agents_app.runs.services import run_create
from agents_app.runs.writer import locked_run

# The fields of a step copied as they are (the fork's own plan, run and id aside).
COPIED_STEP_FIELDS = (
    "index",
    "objective",
    "tool_names",
    "reasoning",
    "depends_on",
    "status",
    "output",
    "error",
    "thinking",
    "retry_count",
    "started_at",
    "finished_at",
)
COPIED_CALL_FIELDS = (
    "attempt",
    "tool",
    "arguments",
    "result",
    "error",
    "status",
    "duration_ms",
    "created_at",
)
INSTRUCTION_MAX_CHARS = 4000
OBJECTIVE_MAX_CHARS = 2000


@dataclass(frozen=True)
class Copies:
    """What a fork copied of its source: the source's step and tool call ids -> the fork's."""

    steps: dict[int, int]
    calls: dict[int, int]


def _invalid(field: str, message: str, **details: Any) -> DomainError:
    return DomainError(ErrorCode.VALIDATION_ERROR, message, {"field": field, **details})


def _step_number(after_step: Any) -> int:
    if isinstance(after_step, bool) or not isinstance(after_step, int | str):
        raise _invalid("after_step", "after_step is a step number (1 is the first step)")
    try:
        number = int(after_step)
    except ValueError:
        raise _invalid("after_step", "after_step is a step number (1 is the first step)") from None
    if number < 1:
        raise _invalid("after_step", "after_step is a step number (1 is the first step)")
    return number


def _source_plan(run: Run, plan_version: Any) -> Plan:
    plans = Plan.objects.filter(run=run)
    if plan_version is None:
        plan = plans.order_by("-version").first()
    elif isinstance(plan_version, bool) or not isinstance(plan_version, int):
        raise _invalid("plan_version", "plan_version is a whole number (null: the latest)")
    else:
        plan = plans.filter(version=plan_version).first()
    if plan is None:
        raise _invalid(
            "plan_version",
            f"Run {run.pk} has no plan version {plan_version}"
            if plan_version is not None
            else f"Run {run.pk} has no plan to fork",
        )
    return plan


def _edited_steps(steps: Any, kept: int) -> list[str] | None:
    """The edited remaining steps' objectives, or None when they are not edited."""
    if steps is None:
        return None
    if not isinstance(steps, list) or not all(isinstance(s, str) for s in steps):
        raise _invalid("steps", "steps is a list of the remaining steps' objectives")
    objectives = [" ".join(s.split()) for s in steps]
    objectives = [s for s in objectives if s]
    if not objectives:
        raise _invalid("steps", "The edited remaining plan has no step")
    if kept + len(objectives) > settings.AGENT_MAX_STEPS:
        raise _invalid(
            "steps",
            f"The fork would have {kept + len(objectives)} steps; at most "
            f"{settings.AGENT_MAX_STEPS} are allowed (AGENT_MAX_STEPS)",
            max_steps=settings.AGENT_MAX_STEPS,
        )
    for objective in objectives:
        problem = text_problem(objective)
        if problem is None and len(objective) > OBJECTIVE_MAX_CHARS:
            problem = f"is longer than {OBJECTIVE_MAX_CHARS} characters"
        if problem:
            raise _invalid("steps", f"A step's objective {problem}")
    return objectives


def _instruction(instruction: Any) -> str:
    if instruction is None:
        return ""
    if not isinstance(instruction, str):
        raise _invalid("instruction", "instruction is text")
    text = instruction.strip()
    problem = text_problem(text)
    if problem is None and len(text) > INSTRUCTION_MAX_CHARS:
        problem = f"is longer than {INSTRUCTION_MAX_CHARS} characters"
    if problem:
        raise _invalid("instruction", f"The instruction {problem}")
    return text


@dataclass(frozen=True)
class ForkPoint:
    """Where a source stood after the step a fork goes on after: the journal rows whose latest
    change per path was its workspace then (in the order they happened), and how many of the
    source's own journal rows the fork's journal takes over (`own`, in seq order)."""

    changes: list[WorkspaceChange]
    own: list[WorkspaceChange] = field(default_factory=list)


def _checked_steps(source: Run, plan: Plan, number: int) -> list[Step]:
    """The plan's steps. VALIDATION_ERROR for a step that is not the plan's or did not
    complete, or one before it that has not ended."""
    steps = list(Step.objects.filter(plan=plan).order_by("index"))
    if number > len(steps):
        raise _invalid(
            "after_step",
            f"Plan v{plan.version} of run {source.pk} has {len(steps)} steps, no step {number}",
            after_step=number,
        )
    step = steps[number - 1]
    if step.status != StepStatus.COMPLETED:
        raise _invalid(
            "after_step",
            f"Step {number} is {step.status}: a fork goes on after a completed step",
            after_step=number,
        )
    if undone := [s.index + 1 for s in steps[: number - 1] if s.status not in DONE]:
        raise _invalid(
            "after_step",
            f"Step {undone[0]} before it has not ended",
            after_step=number,
        )
    return steps


def in_flight(number: int, steps: list[int]) -> DomainError:
    """CONFLICT: later steps were at work when step `number` ended, so what the run was after
    it alone was never there to fork from (their changes are mixed in)."""
    return DomainError(
        ErrorCode.CONFLICT,
        f"Step {steps[0]} was already at work when step {number} ended: what the run was "
        f"after step {number} alone was never there to fork from",
        {"after_step": number, "in_flight": steps},
    )


def journal_stopped(run: Run, number: int) -> DomainError:
    return DomainError(
        ErrorCode.CONFLICT,
        f"Run {run.pk}'s workspace journal stopped before step {number} ended (its quota or "
        "entry limit): its files after that step cannot be rebuilt",
        {"after_step": number, "run_id": run.pk},
    )


def own_fork_point(source: Run, plan: Plan, steps: list[Step], number: int) -> ForkPoint:
    """A run that does its steps itself (runs.task_recipe): its own journal up to the end of
    step `number` (runs.journal_files). CONFLICT where a later step was at work then, or the
    journal stopped before."""
    step = steps[number - 1]
    overlapping = [
        s.index + 1
        for s in steps[number:]
        if s.started_at is not None and step.finished_at and s.started_at < step.finished_at
    ]
    if overlapping:
        raise in_flight(number, overlapping)
    point = journal_point(run=source, after_step=number, plan=plan)
    if not point.complete:
        raise journal_stopped(source, number)
    changes = WorkspaceChange.objects.filter(run=source, seq__lte=point.seq).order_by("seq")
    own = list(changes)
    return ForkPoint(changes=own, own=own)


@transaction.atomic
def run_fork(
    *,
    user: Any,
    run_id: int,
    after_step: Any,
    plan_version: Any = None,
    steps: Any = None,
    instruction: Any = "",
    connection: Any = None,
    actor: Any,
    interface: str,
) -> Run:
    """A fork of `user`'s run `run_id` after its completed step `after_step` of plan version
    `plan_version` (None: the latest), queued. `steps`: the remaining steps' objectives to do
    instead of the source's (None: as planned); `instruction`: added to every later step's
    input; `connection`: an enabled LLM connection's id or name to run on (None: the
    source's). Returns the new run. Raises DomainError NOT_FOUND for another person's run,
    CONFLICT while it works, for a kind not forked on its own, or where the workspace after
    the step cannot be rebuilt, VALIDATION_ERROR (details.field) for bad input, and as
    task_submit does while the kill switch is engaged or the person's queue is full."""
    source = run_get(user=user, run_id=run_id)
    recipe = recipe_for(source.kind)
    if "fork" not in recipe.actions:
        raise DomainError(
            ErrorCode.CONFLICT,
            f"Run {source.pk} is a {recipe.label}, which is not forked on its own",
            {"kind": source.kind},
        )
    with locked_run(source.pk) as w:
        if not w.run.is_terminal:
            raise DomainError(
                ErrorCode.CONFLICT,
                f"Run {source.pk} is still {w.run.status}; a run is forked once it ended",
                {"status": w.run.status},
            )
        source = w.run
    number = _step_number(after_step)
    plan = _source_plan(source, plan_version)
    source_steps = _checked_steps(source, plan, number)
    point = recipe.fork_point(source, plan, source_steps, number)
    edited = _edited_steps(steps, number)
    extra = _instruction(instruction)
    chosen = connection_for_phase(connection, field="connection")
    refuse_while_halted()
    turns = admission_check(source.owner_id)

    fork = run_create(task=source.task, kind=source.kind, close_policy=source.close_policy)
    if chosen is None and source.connection is not None and source.connection.enabled:
        chosen = source.connection  # the source's, unless the fork was asked for another
    options: dict[str, Any] = {}
    if edited is not None:
        options["steps"] = edited
    if extra:
        options["instruction"] = extra
    if chosen is not None and connection not in (None, ""):
        options["connection_id"] = chosen.pk
    copies = copy_plan(fork, plan, source_steps, number, edited)
    journal_seq, journal_bytes = copy_journal(fork, point.own, copies)
    files = files_at(point.changes)
    not_recreated = [f.path for f in files if f.kind != ChangeKind.WRITE]
    if not_recreated:
        options["not_recreated"] = not_recreated
    fields: dict[str, Any] = {
        **recipe.fork_along(source, fork, copies, number),
        "origin": Origin.FORK,
        "origin_run": source,
        "origin_step": number,
        "origin_plan_version": plan.version,
        "origin_options": options,
        "tool_calls_made": len(copies.calls),
        "journal_seq": journal_seq,
        "journal_bytes": journal_bytes,
    }
    if chosen is not None:
        fields.update(connection=chosen, llm_model=chosen.model)
    for name, value in fields.items():
        setattr(fork, name, value)
    fork.save(update_fields=list(fields))
    audit_record(
        action=RUN_FORK,
        interface=interface,
        actor=actor,
        run=source,
        details={
            "new_run_id": fork.pk,
            "after_step": number,
            "plan_version": plan.version,
            **{k: v for k, v in options.items() if k != "not_recreated"},
        },
    )
    _rebuild_workspace(fork, source, files)
    run_admit(fork, turns)
    return fork


def copy_plan(
    fork: Run,
    plan: Plan,
    source_steps: list[Step],
    number: int,
    edited: list[str] | None,
) -> "Copies":
    """The fork's one plan: the source's steps up to `number` as they ended, with their tool
    calls, and the remaining ones as planned (pending) or as edited. Returns what was copied
    (the source's ids -> the fork's). `fork` may be a copy of a child too
    (orchestration.forks): then `number` is its last step."""
    raw = dict(plan.raw) if isinstance(plan.raw, dict) else {}
    kept = source_steps[:number]
    if edited is None:
        remaining = [
            Step(
                run=fork,
                index=s.index,
                objective=s.objective,
                tool_names=s.tool_names,
                reasoning=s.reasoning,
                depends_on=s.depends_on,
            )
            for s in source_steps[number:]
        ]
    else:
        # The person's steps name no dependencies: they run one after another.
        raw = recipe_for(fork.kind).fork_raw(raw, number, edited)
        remaining = [
            Step(run=fork, index=number + i, objective=o, tool_names=[], reasoning="")
            for i, o in enumerate(edited)
        ]
    reason = f"Fork of run {plan.run_id} after step {number} (plan v{plan.version})"
    copy = Plan(run=fork, version=1, reason=reason, raw=raw, thinking=plan.thinking)
    rows.insert([copy], ids=True)
    copied = [
        Step(run=fork, plan=copy, **{f: getattr(s, f) for f in COPIED_STEP_FIELDS}) for s in kept
    ]
    for step in remaining:
        step.plan = copy
    rows.insert([*copied, *remaining], ids=True)
    by_source = {s.pk: c for s, c in zip(kept, copied, strict=True)}
    originals = list(ToolCall.objects.filter(step__in=kept).order_by("id"))
    calls = [
        ToolCall(
            run=fork,
            step=by_source[call.step_id],
            **{f: getattr(call, f) for f in COPIED_CALL_FIELDS},
        )
        for call in originals
    ]
    rows.insert(calls, ids=True)
    with locked_run(fork.pk) as w:
        w.event(
            EventType.PLAN_CREATED,
            PlanCreatedPayload(
                version=1,
                steps=[
                    {
                        "objective": step.objective,
                        "tool_names": step.tool_names,
                        "depends_on": step.depends_on,
                    }
                    for step in [*copied, *remaining]
                ],
            ),
        )
    return Copies(
        steps={old: new.pk for old, new in by_source.items()},
        calls={old.pk: new.pk for old, new in zip(originals, calls, strict=True)},
    )


def copy_journal(fork: Run, changes: list[WorkspaceChange], copies: "Copies") -> tuple[int, int]:
    """A source's journal rows `changes` (its first ones, in seq order) as the fork's, their
    steps and calls its copies: the Files panel shows the fork's files after any copied step,
    and its own journal goes on from there. Returns the fork's journal_seq and journal_bytes."""
    copied = [
        WorkspaceChange(
            run=fork,
            step_id=copies.steps.get(c.step_id),
            tool_call_id=copies.calls.get(c.tool_call_id),
            seq=c.seq,
            path=c.path,
            kind=c.kind,
            sha256=c.sha256,
            size=c.size,
            mode=c.mode,
            created_at=c.created_at,
        )
        for c in changes
    ]
    rows.insert(copied)
    contents = {c.sha256: c.size for c in changes if c.kind == ChangeKind.WRITE}
    return (changes[-1].seq if changes else 0), sum(contents.values())


def files_at(changes: list[WorkspaceChange]) -> list[WorkspaceChange]:
    """Each path's latest change in `changes` (in the order they happened), deleted ones gone,
    in path order: the workspace they leave."""
    latest: dict[str, WorkspaceChange] = {}
    for change in changes:
        if change.kind == ChangeKind.DELETE:
            latest.pop(change.path, None)
        elif change.kind != ChangeKind.STOPPED:
            latest[change.path] = change
    return [latest[path] for path in sorted(latest)]


def _rebuild_workspace(fork: Run, source: Run, files: list[WorkspaceChange]) -> None:
    """The fork's workspace as the source's was after the step (`files`, `files_at`'s): each
    regular file from its blob,
    with its mode (links and special files are not recreated: the journal kept no content of
    them; a path not valid on disk neither). Done last in the fork's transaction: a failure here removes the
    directory and rolls the fork back (a failure after it, a database error, would leave a
    directory no run owns: run ids are never reused)."""
    directory = workspace_dir(fork)
    try:
        for entry in files:
            relative = disk_path(entry.path) if entry.kind == ChangeKind.WRITE else None
            if relative is None:
                continue
            target = directory / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            _copy_blob(blob_path(entry.sha256), target, entry.mode, source, entry.path)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise


def _copy_blob(blob: Path, target: Path, mode: int, source: Run, path: str) -> None:
    try:
        shutil.copyfile(blob, target)
    except OSError:
        raise DomainError(
            ErrorCode.CONFLICT,
            f"The stored content of '{path}' is gone: run {source.pk}'s files cannot be rebuilt",
            {"run_id": source.pk, "path": path},
        ) from None
    os.chmod(target, (mode & 0o7777) or 0o644)
