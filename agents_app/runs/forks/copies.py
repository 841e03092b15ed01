"""What a fork copies of its source (runs.forks): its plan with the steps up to N and their
calls, its journal rows, and its workspace rebuilt from them."""

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from agents_app.core import rows
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.event_payloads import PlanCreatedPayload
from agents_app.core.events import EventType
from agents_app.models import (
    ChangeKind,
    Plan,
    Run,
    Step,
    ToolCall,
    WorkspaceChange,
)
from agents_app.runs.files import disk_path, workspace_dir
from agents_app.runs.journal import blob_path
from agents_app.runs.recipes import recipe_for
from agents_app.runs.writer import locked_run

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


@dataclass(frozen=True)
class Copies:
    """What a fork copied of its source: the source's step and tool call ids -> the fork's."""

    steps: dict[int, int]
    calls: dict[int, int]


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


def rebuild_workspace(fork: Run, source: Run, files: list[WorkspaceChange]) -> None:
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
