"""A run's files as they were after one of its steps, rebuilt from its workspace journal
(runs.journal): for each path, its latest change at or before the step's end. The Files panel
and `GET /runs/{id}/files?after_step=N` show them. Callers pass a run already scoped to its
owner (`selectors.run_get`).

Steps are numbered as the run page numbers them: step N is the one at index N-1 of the run's
latest plan, and it must have ended. "After step N" is every change recorded by the steps that
ended no later than it (of any plan version: a replan's earlier steps came first), which also
holds for a parallel plan's steps, each ended at its own time."""

from dataclasses import dataclass

from django.conf import settings
from django.db.models import Max

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.models import ChangeKind, Plan, Run, Step, WorkspaceChange
from agents_app.runs.files import FileListing, Preview, WorkspaceFile
from agents_app.runs.journal import blob_path


@dataclass(frozen=True)
class JournalPoint:
    """The end of step `number` in the journal: its changes are those up to `seq`."""

    number: int
    step: Step
    seq: int
    # Everything up to `seq` was recorded: the workspace can be rebuilt as it was then.
    complete: bool


@dataclass(frozen=True)
class JournalFile:
    file: WorkspaceFile
    kind: str  # write, link or other (a link's or special file's content was not kept)
    sha256: str
    mode: int


def journal_steps(run: Run) -> list[int]:
    """The numbers of the latest plan's steps that ended, which the panel offers (none for a
    run with no journal, or none yet)."""
    if not run.journaled or not run.journal_seq:
        return []
    plan = Plan.objects.filter(run=run).order_by("-version").values("pk").first()
    if plan is None:
        return []
    indices = Step.objects.filter(plan_id=plan["pk"], finished_at__isnull=False).values_list(
        "index", flat=True
    )
    return sorted(index + 1 for index in indices)


def _refuse(run: Run, after_step: object, why: str) -> DomainError:
    return DomainError(
        ErrorCode.VALIDATION_ERROR,
        f"after_step: {why}",
        {"field": "after_step", "run_id": run.pk, "after_step": str(after_step)[:40]},
    )


def journal_point(*, run: Run, after_step: str | int, plan: Plan | None = None) -> JournalPoint:
    """Where step `after_step` ended in the run's journal. VALIDATION_ERROR when it is not a
    step number of `plan` (the run's latest plan when None) that ended, or the run has no
    journal (recorded before journals were kept)."""
    try:
        number = int(after_step)
    except (TypeError, ValueError):
        raise _refuse(run, after_step, "give a step number (1 is the first step)") from None
    if not run.journaled:
        raise _refuse(run, after_step, "this run was recorded before workspace journals were kept")
    if plan is None:
        plan = Plan.objects.filter(run=run).order_by("-version").first()
    step = (
        Step.objects.filter(plan=plan, index=number - 1).first()
        if plan is not None and number >= 1
        else None
    )
    if step is None:
        raise _refuse(run, after_step, f"run {run.pk} has no step {number}")
    if step.finished_at is None:
        raise _refuse(run, after_step, f"step {number} has not ended")
    seq = (
        WorkspaceChange.objects.filter(run=run, step__finished_at__lte=step.finished_at).aggregate(
            last=Max("seq")
        )["last"]
        or 0
    )
    complete = run.journal_complete_until is None or seq <= run.journal_complete_until
    return JournalPoint(number=number, step=step, seq=seq, complete=complete)


def _latest(run: Run, point: JournalPoint, path: str | None = None) -> dict[str, WorkspaceChange]:
    changes = WorkspaceChange.objects.filter(run=run, seq__lte=point.seq).order_by("seq")
    if path is not None:
        changes = changes.filter(path=path)
    latest: dict[str, WorkspaceChange] = {}
    for change in changes.exclude(kind=ChangeKind.STOPPED):
        if change.kind == ChangeKind.DELETE:
            latest.pop(change.path, None)
        else:
            latest[change.path] = change
    return latest


def _file(change: WorkspaceChange) -> JournalFile:
    return JournalFile(
        file=WorkspaceFile(path=change.path, size=change.size, modified_at=change.created_at),
        kind=change.kind,
        sha256=change.sha256,
        mode=change.mode,
    )


def journal_files(*, run: Run, point: JournalPoint) -> list[JournalFile]:
    """Every path of the workspace as it was at `point`, in path order."""
    latest = _latest(run, point)
    return [_file(latest[path]) for path in sorted(latest)]


def journal_listing(*, run: Run, point: JournalPoint) -> FileListing:
    """The regular files at `point`, as `files.run_files` lists the workspace now."""
    limit = settings.RUN_FILES_MAX_ENTRIES
    files = [f.file for f in journal_files(run=run, point=point) if f.kind == ChangeKind.WRITE]
    return FileListing(files=files[:limit], truncated=len(files) > limit, limit=limit)


def journal_file_get(*, run: Run, point: JournalPoint, path: str) -> JournalFile:
    """The regular file `path` (a display path) as it was at `point`; NOT_FOUND when there was
    none there then (a link's or special file's content was not kept)."""
    change = _latest(run, point, path).get(path)
    if change is None or change.kind != ChangeKind.WRITE:
        raise DomainError(
            ErrorCode.NOT_FOUND,
            f"Run {run.pk} had no file '{path}' after step {point.number}",
            {"run_id": run.pk, "path": path, "after_step": point.number},
        )
    return _file(change)


def journal_file_read(*, run: Run, file: JournalFile, limit: int) -> bytes | None:
    """The file's content, from its blob, or None past `limit` bytes. NOT_FOUND when the blob
    is gone (WORKSPACE_ROOT cleaned by hand)."""
    if file.file.size > limit:
        return None
    try:
        with open(blob_path(file.sha256), "rb") as handle:
            return handle.read(limit + 1)
    except OSError:
        raise DomainError(
            ErrorCode.NOT_FOUND,
            f"The stored content of '{file.file.path}' is gone",
            {"run_id": run.pk, "path": file.file.path},
        ) from None


def journal_file_preview(*, run: Run, point: JournalPoint, path: str) -> Preview:
    """The file's text as it was at `point`, as `files.run_file_preview` answers for now."""
    file = journal_file_get(run=run, point=point, path=path)
    limit = settings.RUN_FILES_PREVIEW_BYTES
    data = journal_file_read(run=run, file=file, limit=limit)
    if data is None or len(data) > limit:
        return Preview(file.file, None, f"too large to preview ({file.file.size} bytes)")
    if b"\x00" in data:
        return Preview(file.file, None, "a binary file")
    try:
        return Preview(file.file, data.decode("utf-8"))
    except UnicodeDecodeError:
        return Preview(file.file, None, "a binary file (not UTF-8 text)")
