"""A run's workspace files as its owner sees them (the Files panel and `/runs/{id}/files`):
listed, opened and zipped, confined to the workspace and bounded in size.

A requested path is refused before the disk is touched when it could not name a file inside
the workspace (absolute, `..`, NUL: VALIDATION_ERROR); what it resolves to, every symlink
followed, must be a regular file inside the workspace, else NOT_FOUND, the same answer as a
file that does not exist. A listing leaves out symlinks that lead outside and does not enter
symlinked directories. Callers pass a run they already scoped to its owner
(`selectors.run_get`)."""

import io
import os
import stat
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from django.conf import settings

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.models import Run

# Longest path a request may name; deeper trees are listed but not addressable by longer ones.
PATH_MAX_LENGTH = 1024


@dataclass(frozen=True)
class WorkspaceFile:
    path: str  # relative to the workspace, '/'-separated
    size: int
    modified_at: datetime

    @property
    def name(self) -> str:
        return PurePosixPath(self.path).name


@dataclass(frozen=True)
class FileListing:
    files: list[WorkspaceFile]
    truncated: bool  # more files than `limit`: the rest are left out
    limit: int

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)


def workspace_name(run: Run) -> str:
    """A run's directory under WORKSPACE_ROOT: a chat answer shares its conversation's, so the
    files of one answer are there for the next, and a child its tree's root's."""
    if run.conversation_id:
        return f"conversation-{run.conversation_id}"
    # A team's children work in their head node's directory: one's files are the next one's.
    return f"run-{run.root_id or run.pk}"


def workspace_dir(run: Run) -> Path:
    """Where the run's tools read and write (`lifecycle.workspace_for`), not created here: a
    run that never wrote a file has no directory and no files."""
    return Path(settings.WORKSPACE_ROOT) / workspace_name(run)


def _root(run: Run) -> Path | None:
    directory = workspace_dir(run)
    try:
        return directory.resolve(strict=True) if directory.is_dir() else None
    except OSError:
        return None


def _file_of(root: Path, shown: Path, info: os.stat_result) -> WorkspaceFile:
    return WorkspaceFile(
        path=shown.relative_to(root).as_posix(),
        size=info.st_size,
        modified_at=datetime.fromtimestamp(info.st_mtime, tz=UTC),
    )


def _walk(root: Path, directory: Path) -> Iterator[WorkspaceFile]:
    """Regular files under `directory` in path order; symlinks followed only within `root`,
    symlinked directories not entered (no loops, nothing counted twice)."""
    try:
        children = sorted(os.scandir(directory), key=lambda child: child.name)
    except OSError:
        return
    for child in children:
        shown = directory / child.name
        real = Path(os.path.realpath(shown))
        if not real.is_relative_to(root):
            continue
        try:
            info = real.stat()
        except OSError:
            continue  # dangling symlink, or gone since the scan
        if stat.S_ISDIR(info.st_mode):
            if not child.is_symlink():
                yield from _walk(root, shown)
        elif stat.S_ISREG(info.st_mode):
            yield _file_of(root, shown, info)


def run_files(*, run: Run, limit: int | None = None) -> FileListing:
    """The run's files in path order, at most `limit` (RUN_FILES_MAX_ENTRIES); `truncated`
    says some were left out."""
    limit = limit or settings.RUN_FILES_MAX_ENTRIES
    root = _root(run)
    files: list[WorkspaceFile] = []
    truncated = False
    if root is not None:
        for entry in _walk(root, root):
            if len(files) == limit:
                truncated = True
                break
            files.append(entry)
    return FileListing(files=files, truncated=truncated, limit=limit)


def _checked(requested: str) -> PurePosixPath:
    """`requested` as a relative path, or VALIDATION_ERROR when it could not name a file
    inside the workspace."""

    def refuse(why: str) -> DomainError:
        return DomainError(
            ErrorCode.VALIDATION_ERROR,
            f"Invalid file path: {why}",
            {"field": "path", "path": requested[:PATH_MAX_LENGTH]},
        )

    if not requested or not requested.strip():
        raise refuse("it is empty")
    if len(requested) > PATH_MAX_LENGTH:
        raise refuse(f"it is longer than {PATH_MAX_LENGTH} characters")
    if "\x00" in requested or "\\" in requested:
        raise refuse("it holds a NUL or a backslash")
    path = PurePosixPath(requested)
    if path.is_absolute() or (path.parts and path.parts[0].endswith(":")):
        raise refuse("it is absolute; give a path relative to the workspace")
    if ".." in path.parts:
        raise refuse("'..' is not allowed; give a path inside the workspace")
    return path


def run_file_get(*, run: Run, path: str) -> WorkspaceFile:
    """The file `path` names in the run's workspace. VALIDATION_ERROR for a path that could
    not be inside it; NOT_FOUND when no regular file is there or it resolves outside."""
    relative = _checked(path)
    root = _root(run)
    missing = DomainError(
        ErrorCode.NOT_FOUND,
        f"Run {run.pk} has no file '{relative}'",
        {"run_id": run.pk, "path": str(relative)},
    )
    if root is None:
        raise missing
    shown = root / relative
    try:
        real = shown.resolve(strict=True)
        info = real.stat()
    except (OSError, RuntimeError):
        raise missing from None
    if not real.is_relative_to(root) or not stat.S_ISREG(info.st_mode):
        raise missing
    return _file_of(root, shown, info)


def _too_large(run: Run, file: WorkspaceFile, limit: int) -> DomainError:
    return DomainError(
        ErrorCode.PAYLOAD_TOO_LARGE,
        f"'{file.path}' is {file.size} bytes, more than the {limit} bytes a download may be",
        {"run_id": run.pk, "path": file.path, "size": file.size, "max_bytes": limit},
    )


def run_file_open(*, run: Run, path: str) -> tuple[WorkspaceFile, BinaryIO]:
    """The file and an open binary handle on it (the caller closes it), as `run_file_get`
    answers, or PAYLOAD_TOO_LARGE past RUN_FILES_MAX_BYTES."""
    file = run_file_get(run=run, path=path)
    limit = settings.RUN_FILES_MAX_BYTES
    if file.size > limit:
        raise _too_large(run, file, limit)
    gone = DomainError(
        ErrorCode.NOT_FOUND, f"Run {run.pk} has no file '{file.path}'", {"run_id": run.pk}
    )
    root = _root(run)
    try:
        real = (workspace_dir(run) / file.path).resolve(strict=True)
        if root is None or not real.is_relative_to(root):
            raise gone
        # O_NOFOLLOW: the last component cannot have become a symlink since it was checked.
        descriptor = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except (OSError, RuntimeError):
        raise gone from None
    handle = os.fdopen(descriptor, "rb")
    size = os.fstat(descriptor).st_size
    if size > limit:
        handle.close()
        raise _too_large(run, file, limit)
    return file, handle


@dataclass(frozen=True)
class Preview:
    file: WorkspaceFile
    text: str | None  # None: not shown, `reason` says why
    reason: str = ""


def run_file_preview(*, run: Run, path: str) -> Preview:
    """The file's text for the page, when it is UTF-8 text of at most RUN_FILES_PREVIEW_BYTES;
    otherwise why it is not shown (binary, too large). Raises as `run_file_get`."""
    file = run_file_get(run=run, path=path)
    limit = settings.RUN_FILES_PREVIEW_BYTES
    if file.size > limit:
        return Preview(file, None, f"too large to preview ({file.size} bytes; at most {limit})")
    try:
        _, handle = run_file_open(run=run, path=path)
    except DomainError as error:
        if error.code == ErrorCode.PAYLOAD_TOO_LARGE:
            return Preview(file, None, "too large to preview")
        raise
    with handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        return Preview(file, None, "too large to preview (it grew while being read)")
    if b"\x00" in data:
        return Preview(file, None, "a binary file")
    try:
        return Preview(file, data.decode("utf-8"))
    except UnicodeDecodeError:
        return Preview(file, None, "a binary file (not UTF-8 text)")


def run_files_zip(*, run: Run) -> bytes:
    """Every listed file in one zip archive, built in memory. PAYLOAD_TOO_LARGE when the files
    add up to more than RUN_FILES_ZIP_MAX_BYTES, or the listing was cut off (the archive would
    miss files)."""
    listing = run_files(run=run)
    limit = settings.RUN_FILES_ZIP_MAX_BYTES
    if listing.truncated or listing.total_bytes > limit:
        raise DomainError(
            ErrorCode.PAYLOAD_TOO_LARGE,
            f"The workspace is too large to download as one archive (at most {limit} bytes and "
            f"{listing.limit} files); download the files one by one",
            {"run_id": run.pk, "max_bytes": limit, "max_files": listing.limit},
        )
    buffer = io.BytesIO()
    written = 0
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for file in listing.files:
            try:
                _, handle = run_file_open(run=run, path=file.path)
            except DomainError:
                continue  # gone or changed since the listing
            with handle:
                data = handle.read(limit - written + 1)
            written += len(data)
            if written > limit:
                raise DomainError(
                    ErrorCode.PAYLOAD_TOO_LARGE,
                    f"The workspace grew past {limit} bytes while being archived",
                    {"run_id": run.pk, "max_bytes": limit},
                )
            archive.writestr(file.path, data)
    return buffer.getvalue()
