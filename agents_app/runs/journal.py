"""A run's workspace journal (issue 36): after each tool call the workspace is compared with its
state before, and what changed is recorded (WorkspaceChange), whoever changed it: a builtin
tool, an MCP filesystem server, code run in the sandbox.

The state is a cheap scan (`scan`: path -> kind, size, mtime_ns, mode, by lstat, symlinks never
followed), kept in memory by the worker between calls (`WorkspaceJournal`, one per run a worker
executes, shared by a parallel plan's steps). Only an entry whose (size, mtime_ns, mode)
moved, or that appeared, is read: its content is hashed (sha256) while it is copied to a
temporary file, which becomes the blob WORKSPACE_ROOT/.blobs/ab/cdef… unless that content is
stored already (each content once, whatever run wrote it). Symlinks and special files are
recorded as kind link / other, never read. The rows wait in the step's PendingWrites and are
written, numbered, by its next commit (`changes_write`), as the call's result is.

A run's contents count against WORKSPACE_JOURNAL_MAX_BYTES (each distinct content once); past
it, or when the workspace holds more than WORKSPACE_JOURNAL_MAX_FILES entries, the journal
stops: a last row of kind `stopped`, and Run.journal_complete_until says up to where it is
complete (the run is not forkable past it). A blob written for a commit that never happens (the
worker died) is left: it is named by its content, and harmless.

Changes made between two calls of one delivery (nothing of the run's own writes then) are
recorded with the next call; those found when a delivery begins (files already there: a
conversation's, a team's, or written by a call a crash cut off) with no call, compared with the
journal's last state."""

import hashlib
import os
import stat
import tempfile
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import Max

from agents_app.core import rows
from agents_app.models import ChangeKind, Run, WorkspaceChange
from agents_app.runs.files import disk_path, display_path

BLOBS = ".blobs"
_CHUNK = 1024 * 1024


@dataclass(frozen=True)
class Entry:
    kind: str  # ChangeKind.WRITE (a regular file), LINK or OTHER
    size: int
    mtime_ns: int
    mode: int
    sha256: str = ""  # a regular file's content, once read

    def same_stat(self, other: "Entry") -> bool:
        return (self.kind, self.size, self.mtime_ns, self.mode) == (
            other.kind,
            other.size,
            other.mtime_ns,
            other.mode,
        )


class TooManyEntries(Exception):
    pass


def scan(root: Path, limit: int) -> dict[str, Entry]:
    """Every entry under `root` but directories (path relative to it, as `os` names it ->
    Entry without its hash), by lstat: symlinked directories are not entered. Raises
    TooManyEntries past `limit` entries (directories counted)."""
    found: dict[str, Entry] = {}
    seen = 0
    pending = [("", str(root))]
    while pending:
        prefix, directory = pending.pop()
        try:
            children = os.scandir(directory)
        except OSError:
            continue  # gone, or not readable: as if empty
        with children:
            for child in children:
                seen += 1
                if seen > limit:
                    raise TooManyEntries
                name = prefix + child.name
                try:
                    info = child.stat(follow_symlinks=False)
                except OSError:
                    continue
                mode = info.st_mode
                if stat.S_ISDIR(mode):
                    pending.append((name + "/", child.path))
                    continue
                kind = (
                    ChangeKind.WRITE
                    if stat.S_ISREG(mode)
                    else ChangeKind.LINK
                    if stat.S_ISLNK(mode)
                    else ChangeKind.OTHER
                )
                found[name] = Entry(kind, info.st_size, info.st_mtime_ns, stat.S_IMODE(mode))
    return found


def blob_path(sha256: str) -> Path:
    """Where a content is stored: WORKSPACE_ROOT/.blobs/ab/cdef…"""
    return Path(settings.WORKSPACE_ROOT) / BLOBS / sha256[:2] / sha256[2:]


def _store(source: Path) -> tuple[str, int, Path | None] | None:
    """The content of the regular file `source` hashed while copied to a temporary blob:
    (sha256, size, the temporary file or None when that blob exists already), or None when it
    is gone or is no longer a regular file (never followed: O_NOFOLLOW)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        descriptor = os.open(source, flags)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        blobs = Path(settings.WORKSPACE_ROOT) / BLOBS
        blobs.mkdir(exist_ok=True)
        digest = hashlib.sha256()
        size = 0
        out, temporary = tempfile.mkstemp(dir=blobs, prefix=".tmp-")
        try:
            with os.fdopen(out, "wb") as copy:
                while chunk := handle.read(_CHUNK):
                    digest.update(chunk)
                    copy.write(chunk)
                    size += len(chunk)
        except OSError:
            os.unlink(temporary)
            return None
    sha256 = digest.hexdigest()
    if blob_path(sha256).exists():
        os.unlink(temporary)
        return sha256, size, None
    return sha256, size, Path(temporary)


def _keep(sha256: str, temporary: Path) -> None:
    target = blob_path(sha256)
    target.parent.mkdir(exist_ok=True)
    os.replace(temporary, target)  # atomic: a reader sees the whole blob or none


class WorkspaceJournal:
    """One run's journal as one worker keeps it between calls: the workspace's last state, the
    contents the run stored and their bytes. A parallel plan's steps share it (its lock)."""

    def __init__(self, run: Run) -> None:
        self.run_id = run.pk
        self._lock = threading.Lock()
        self.state: dict[str, Entry] | None = None  # None until the delivery's first call
        self.stopped = not run.journaled or run.journal_complete_until is not None
        self.bytes = run.journal_bytes
        self.contents: set[str] = set()
        self._journal_seq = run.journal_seq

    def before_call(self, *, workspace: Path, step_id: int | None, pending: list[Any]) -> None:
        """At a delivery's first call: the journal's last state read, and what differs from it
        now recorded with no call."""
        if self.stopped or self.state is not None:
            return
        with self._lock:
            if self.state is None:
                self.state = self._last_state()
                self._record(workspace, step_id, None, pending)

    def after_call(
        self, *, workspace: Path, step_id: int | None, call_id: int, pending: list[Any]
    ) -> None:
        """What the call changed, recorded in `pending` (written by the step's next commit)."""
        if self.stopped:
            return
        with self._lock:
            self._record(workspace, step_id, call_id, pending)

    def _last_state(self) -> dict[str, Entry]:
        """The workspace as the journal last recorded it (a run's first delivery: empty)."""
        if not self._journal_seq:
            return {}
        latest = (
            WorkspaceChange.objects.filter(run_id=self.run_id)
            .values("path")
            .annotate(last=Max("seq"))
            .values("last")
        )
        state: dict[str, Entry] = {}
        rows = WorkspaceChange.objects.filter(run_id=self.run_id, seq__in=latest).values_list(
            "path", "kind", "sha256", "size", "mode"
        )
        for path, kind, sha256, size, mode in rows:
            if kind in (ChangeKind.WRITE, ChangeKind.LINK, ChangeKind.OTHER):
                # mtime unknown: a file of the same size is read again, once, and kept if
                # its content is the one recorded.
                state[disk_path(path) or path] = Entry(kind, size, -1, mode, sha256)
                if sha256:
                    self.contents.add(sha256)
        return state

    def _record(
        self, workspace: Path, step_id: int | None, call_id: int | None, pending: list[Any]
    ) -> None:
        state = self.state if self.state is not None else {}
        if not os.path.isdir(workspace) and not state:
            return  # no workspace, nothing was there: nothing to compare (the common no-op)
        try:
            now = scan(workspace, settings.WORKSPACE_JOURNAL_MAX_FILES)
        except TooManyEntries:
            self._stop(
                f"the workspace holds more than {settings.WORKSPACE_JOURNAL_MAX_FILES} entries",
                step_id,
                call_id,
                pending,
            )
            return
        changes: list[WorkspaceChange] = []

        def change(path: str, kind: str, entry: Entry | None = None, counted: int = 0) -> None:
            row = rows.new(
                WorkspaceChange,
                run_id=self.run_id,
                step_id=step_id,
                tool_call_id=call_id,
                seq=0,
                path=display_path(path),
                kind=kind,
                sha256=entry.sha256 if entry else "",
                size=entry.size if entry else 0,
                mode=entry.mode if entry else 0,
            )
            row.counted = counted  # the bytes its content adds to the run's (a new content)
            changes.append(row)

        for path in sorted(now):
            entry, before = now[path], state.get(path)
            if before is not None and entry.same_stat(before):
                now[path] = before  # unchanged: its hash is the one known
                continue
            if entry.kind != ChangeKind.WRITE:
                change(path, entry.kind, entry)
                continue
            stored = _store(workspace / path)
            if stored is None:
                del now[path]  # gone while it was read: as if never there
                continue
            sha256, size, temporary = stored
            entry = replace(entry, sha256=sha256, size=size)
            now[path] = entry
            if before is not None and (before.sha256, before.mode) == (sha256, entry.mode):
                if temporary is not None:
                    os.unlink(temporary)
                continue  # touched, not changed
            if sha256 not in self.contents:
                if self.bytes + size > settings.WORKSPACE_JOURNAL_MAX_BYTES:
                    if temporary is not None:
                        os.unlink(temporary)
                    pending.extend(changes)
                    self._stop(
                        f"its contents passed WORKSPACE_JOURNAL_MAX_BYTES "
                        f"({settings.WORKSPACE_JOURNAL_MAX_BYTES} bytes)",
                        step_id,
                        call_id,
                        pending,
                    )
                    return
                self.bytes += size
                self.contents.add(sha256)
                counted = size
            else:
                counted = 0
            if temporary is not None:
                _keep(sha256, temporary)
            change(path, ChangeKind.WRITE, entry, counted)
        for path in sorted(set(state) - set(now)):
            change(path, ChangeKind.DELETE)
        pending.extend(changes)
        self.state = now

    def _stop(self, why: str, step_id: int | None, call_id: int | None, pending: list[Any]) -> None:
        self.stopped = True
        self.state = None
        row = rows.new(
            WorkspaceChange,
            run_id=self.run_id,
            step_id=step_id,
            tool_call_id=call_id,
            seq=0,
            path=why,
            kind=ChangeKind.STOPPED,
        )
        row.counted = 0
        pending.append(row)


def changes_write(changes: list[WorkspaceChange], w: Any) -> None:
    """Number `changes` after the run's last (Run.journal_seq) and insert them, in the lease
    holder's commit (`w`, a runs.writer.RunWriter); their new contents' bytes are added to
    Run.journal_bytes, and a `stopped` row sets Run.journal_complete_until."""
    if not changes:
        return
    run = w.run
    seq = run.journal_seq
    fields: dict[str, Any] = {}
    for change in changes:
        seq += 1
        change.seq = seq
        if change.kind == ChangeKind.STOPPED:
            fields["journal_complete_until"] = seq - 1
    added = sum(getattr(change, "counted", 0) for change in changes)
    if added:
        fields["journal_bytes"] = run.journal_bytes + added
    rows.insert(changes)
    w.set(journal_seq=seq, **fields)
