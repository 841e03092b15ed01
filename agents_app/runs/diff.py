"""Two of a person's runs compared (issue 36, item 5): the rows of each read into plain records
(`engine.run_diff`), compared there, and given one JSON shape for REST, MCP and the page.

Any two runs their owner may read can be compared: two attempts of a task (the common case),
later a fork and its source or a run and its replay. What is compared of each run is its
current plan (the latest version), each step's calls of its last attempt (calls of an attempt
a crash interrupted are not what the step did), and the files it left (`run_files_left`)."""

import hashlib
from dataclasses import asdict
from typing import Any

from django.conf import settings
from django.db.models import Prefetch

from agents_app.core.errors import DomainError
from agents_app.engine.run_diff import (
    CallRecord,
    FileRecord,
    RunDiff,
    RunRecord,
    StepRecord,
    runs_compare,
)
from agents_app.models import ChangeKind, Run, Step, ToolCall, WorkspaceChange
from agents_app.runs import files as workspace_files
from agents_app.runs.presenters import run_summary
from agents_app.runs.selectors import current_plan, run_get

# Hashing a workspace on disk reads every file; past this many bytes in all, the rest are
# compared by size alone (their sha256 is "").
DISK_HASH_MAX_BYTES = 64 * 1024 * 1024


def _steps_of(run: Run) -> tuple[tuple[StepRecord, ...], int | None]:
    """The current plan's steps, in index order, and the plan's version (None: no plan)."""
    plan = current_plan(run)
    if plan is None:
        return (), None
    steps = (
        Step.objects.filter(plan=plan)
        .order_by("index")
        .prefetch_related(Prefetch("tool_calls", queryset=ToolCall.objects.order_by("id")))
    )
    records = tuple(
        StepRecord(
            index=step.index,
            objective=step.objective,
            status=step.status,
            output=step.output,
            error=step.error,
            calls=tuple(
                CallRecord(
                    tool=call.tool,
                    arguments=call.arguments,
                    status=call.status,
                    result=call.result,
                    error=call.error,
                )
                for call in step.tool_calls.all()
                if call.attempt == step.retry_count
            ),
            started_at=step.started_at,
            finished_at=step.finished_at,
        )
        for step in steps
    )
    return records, plan.version


def _files_from_journal(run: Run) -> tuple[FileRecord, ...]:
    """The paths the run's workspace journal (models.journal) says it left, each as its last
    change made it: a write's hash and size, a link or other entry by kind; deleted paths go."""
    left: dict[str, FileRecord] = {}
    changes = (
        WorkspaceChange.objects.filter(run=run)
        .order_by("seq")
        .values_list("path", "kind", "sha256", "size")
    )
    for path, kind, sha256, size in changes:
        if kind == ChangeKind.DELETE:
            left.pop(path, None)
        elif kind == ChangeKind.WRITE:
            left[path] = FileRecord(path=path, sha256=sha256, size=size)
        elif kind != ChangeKind.STOPPED:
            left[path] = FileRecord(path=path, sha256="", size=0, kind=kind)
    return tuple(left[path] for path in sorted(left))


def _files_on_disk(run: Run) -> tuple[FileRecord, ...]:
    """The run's workspace as it is now (runs.files), each file hashed while the bytes read stay
    under DISK_HASH_MAX_BYTES. A chat answer's or a child's workspace is shared, so this is
    what the shared directory holds, not only what the run wrote."""
    budget = DISK_HASH_MAX_BYTES
    records = []
    for file in workspace_files.run_files(run=run).files:
        digest = ""
        if file.size <= min(budget, settings.RUN_FILES_MAX_BYTES):
            try:
                with workspace_files.run_file_handle(run=run, file=file) as handle:
                    digest = hashlib.file_digest(handle, "sha256").hexdigest()
                budget -= file.size
            except DomainError:
                continue  # gone since the listing
        records.append(FileRecord(path=file.path, sha256=digest, size=file.size))
    return tuple(records)


def run_files_left(run: Run) -> tuple[tuple[FileRecord, ...], str]:
    """The files a run left and where they were read from: "journal" for a run whose workspace
    journal recorded changes (issue 36, item 2), else "workspace" (its directory now: a run
    from before the journal, or one that recorded none)."""
    if run.journaled and run.journal_seq:
        return _files_from_journal(run), "journal"
    return _files_on_disk(run), "workspace"


def run_record(run: Run) -> tuple[RunRecord, dict[str, Any]]:
    """The run as a plain record for the comparison, and what its summary adds (the plan
    version compared, where its files were read from)."""
    steps, version = _steps_of(run)
    files, files_from = run_files_left(run)
    record = RunRecord(
        status=run.status,
        final_response=run.final_response,
        error_code=run.error_code,
        prompt_tokens=run.prompt_tokens,
        completion_tokens=run.completion_tokens,
        started_at=run.started_at,
        finished_at=run.finished_at,
        steps=steps,
        files=files,
    )
    return record, {"plan_version": version, "files_from": files_from}


def run_diff(*, user: Any, a_id: int, b_id: int) -> tuple[Run, Run, RunDiff, dict[str, Any]]:
    """Runs `a_id` and `b_id` of `user` compared: (a, b, the comparison, what each summary
    adds). Raises DomainError NOT_FOUND when either is not the user's (or does not exist)."""
    a = run_get(user=user, run_id=a_id)
    b = run_get(user=user, run_id=b_id)
    record_a, extra_a = run_record(a)
    record_b, extra_b = run_record(b)
    return a, b, runs_compare(record_a, record_b), {"a": extra_a, "b": extra_b}


def run_diff_out(a: Run, b: Run, diff: RunDiff, extra: dict[str, Any]) -> dict[str, Any]:
    """The comparison's one JSON shape (REST, MCP): each run's summary, the aligned step rows,
    files, tokens, time, outcome and the first divergence (null when the runs agree)."""
    first = diff.first_divergence
    return {
        "a": {**run_summary(a), **extra["a"]},
        "b": {**run_summary(b), **extra["b"]},
        "steps": diff.steps,
        "files": diff.files,
        "tokens": diff.tokens,
        "time": diff.time,
        "outcome": diff.outcome,
        "first_divergence": asdict(first) if first is not None else None,
        "divergences": len(diff.divergences),
    }
