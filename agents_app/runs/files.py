"""A run's workspace files as its owner sees them (the Files panel and `/runs/{id}/files`):
listed, previewed and opened (zipped by `files_zip`), confined to the workspace and bounded
in size.

A requested path is refused before the disk is touched when it could not name a file inside
the workspace (absolute, `..`, NUL: VALIDATION_ERROR); what it resolves to, every symlink
followed, must be a regular file inside the workspace, else NOT_FOUND, the same answer as a
file that does not exist. A listing leaves out symlinks that lead outside and does not enter
symlinked directories. Callers pass a run they already scoped to its owner
(`selectors.run_get`).

Names are shown, and asked for, by their display path (`display_path`): a name on disk is
bytes, and one that is not UTF-8 (an MCP tool can write b"bad\\xff.md") cannot be text in a
page, a JSON answer or a header as it is. Each byte that is not part of valid UTF-8, each
control character (U+0000-U+001F, U+007F) and each backslash is written `\\xNN` (two
lowercase hex digits): b"bad\\xff.md" is `bad\\xff.md`, "a\\nb" is `a\\x0ab`, a literal
backslash `\\x5c`. Every other name is shown as it is. A requested path is read back the same
way (`\\x` and two hex digits is that byte; any other backslash is refused), so a display path
always finds its file."""

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from django.conf import settings

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.inputs import storable_text
from agents_app.models import Run

# Longest path a request may name; deeper trees are listed but not addressable by longer ones.
PATH_MAX_LENGTH = 1024
# How a display path writes a byte: a backslash, "x" and two hex digits.
_ESCAPE = re.compile(r"\\x([0-9a-fA-F]{2})")


def display_path(path: str) -> str:
    """`path` as the disk gave it (str, its undecodable bytes as surrogateescape's U+DC80 to
    U+DCFF) shown as text: those bytes, control characters and backslashes as `\\xNN`."""
    shown = []
    for character in path:
        code = ord(character)
        if 0xDC80 <= code <= 0xDCFF:
            shown.append(f"\\x{code - 0xDC00:02x}")
        elif code < 0x20 or code == 0x7F or character == "\\":
            shown.append(f"\\x{code:02x}")
        else:
            shown.append(character)
    return "".join(shown)


def disk_path(requested: str) -> str | None:
    """The path on disk (as `os` takes it) a display path names, or None when it holds a
    backslash that does not begin `\\xNN`, or text that is not UTF-8."""
    if "\\" in _ESCAPE.sub("", requested):
        return None
    data = bytearray()
    position = 0
    try:
        for escape in _ESCAPE.finditer(requested):
            data += requested[position : escape.start()].encode("utf-8")
            data.append(int(escape.group(1), 16))
            position = escape.end()
        data += requested[position:].encode("utf-8")
    except UnicodeEncodeError:
        return None
    return os.fsdecode(bytes(data))


@dataclass(frozen=True)
class WorkspaceFile:
    path: str  # its display path (`display_path`): relative to the workspace, '/'-separated
    size: int
    modified_at: datetime
    disk: str = ""  # the path as `os` takes it, relative to the workspace ("": `path`)

    @property
    def name(self) -> str:
        return PurePosixPath(self.path).name

    @property
    def on_disk(self) -> str:
        return self.disk or self.path


@dataclass(frozen=True)
class LeftOut:
    """An entry of the workspace a listing does not give, and why."""

    path: str  # its display path
    why: str


@dataclass(frozen=True)
class FileListing:
    files: list[WorkspaceFile]
    truncated: bool  # more files than `limit`: the rest are left out
    limit: int
    # What the walk passed over (symlinks leading out, special files), for the zip to say.
    passed_over: list[LeftOut] = field(default_factory=list)

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
    disk = shown.relative_to(root).as_posix()
    path = display_path(disk)
    return WorkspaceFile(
        path=path,
        size=info.st_size,
        modified_at=datetime.fromtimestamp(info.st_mtime, tz=UTC),
        disk="" if path == disk else disk,
    )


def _walk(root: Path, directory: Path, passed_over: list[LeftOut]) -> Iterator[WorkspaceFile]:
    """Regular files under `directory` in path order; symlinks followed only within `root`,
    symlinked directories not entered (no loops, nothing counted twice). What it passes
    over, and why, goes to `passed_over`."""
    try:
        children = sorted(os.scandir(directory), key=lambda child: os.fsencode(child.name))
    except OSError:
        return

    def skip(shown: Path, why: str) -> None:
        passed_over.append(LeftOut(display_path(shown.relative_to(root).as_posix()), why))

    for child in children:
        shown = directory / child.name
        real = Path(os.path.realpath(shown))
        if not real.is_relative_to(root):
            skip(shown, "a symlink that leads outside the workspace")
            continue
        try:
            info = real.stat()
        except OSError:
            skip(shown, "a symlink that leads nowhere")  # or gone since the scan
            continue
        if stat.S_ISDIR(info.st_mode):
            if not child.is_symlink():
                yield from _walk(root, shown, passed_over)
            else:
                skip(shown, "a symlink to a directory (its files are archived where they are)")
        elif stat.S_ISREG(info.st_mode):
            yield _file_of(root, shown, info)
        else:
            skip(shown, "not a regular file (a pipe, socket or device)")


def run_files(*, run: Run, limit: int | None = None) -> FileListing:
    """The run's files in path order, at most `limit` (RUN_FILES_MAX_ENTRIES); `truncated`
    says some were left out; `passed_over` what the walk saw and did not list."""
    limit = limit or settings.RUN_FILES_MAX_ENTRIES
    root = _root(run)
    files: list[WorkspaceFile] = []
    passed_over: list[LeftOut] = []
    truncated = False
    if root is not None:
        for entry in _walk(root, root, passed_over):
            if len(files) == limit:
                truncated = True
                break
            files.append(entry)
    return FileListing(files=files, truncated=truncated, limit=limit, passed_over=passed_over)


def _checked(requested: str) -> PurePosixPath:
    """`requested` as a relative path, or VALIDATION_ERROR when it could not name a file
    inside the workspace."""

    def refuse(why: str) -> DomainError:
        return DomainError(
            ErrorCode.VALIDATION_ERROR,
            f"Invalid file path: {why}",
            {"field": "path", "path": storable_text(requested[:PATH_MAX_LENGTH])},
        )

    if not requested or not requested.strip():
        raise refuse("it is empty")
    if len(requested) > PATH_MAX_LENGTH:
        raise refuse(f"it is longer than {PATH_MAX_LENGTH} characters")
    on_disk = disk_path(requested)
    if on_disk is None:
        raise refuse(
            "a backslash must begin an escape such as \\xff (how a listing shows a byte that "
            "is not UTF-8, a control character or a backslash)"
        )
    if "\x00" in on_disk:
        raise refuse("it holds a NUL")
    path = PurePosixPath(on_disk)
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
    shown_path = display_path(str(relative))
    missing = DomainError(
        ErrorCode.NOT_FOUND,
        f"Run {run.pk} has no file '{shown_path}'",
        {"run_id": run.pk, "path": shown_path},
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
    handle = run_file_handle(run=run, file=file)
    if os.fstat(handle.fileno()).st_size > limit:
        handle.close()
        raise _too_large(run, file, limit)
    return file, handle


def run_file_handle(*, run: Run, file: WorkspaceFile) -> BinaryIO:
    """An open binary handle on a file a listing gave (the caller closes it), or NOT_FOUND
    when it is gone, leads out of the workspace or is no longer a regular file."""
    gone = DomainError(
        ErrorCode.NOT_FOUND, f"Run {run.pk} has no file '{file.path}'", {"run_id": run.pk}
    )
    root = _root(run)
    try:
        real = (workspace_dir(run) / file.on_disk).resolve(strict=True)
        if root is None or not real.is_relative_to(root):
            raise gone
        # O_NOFOLLOW: the last component cannot have become a symlink since it was checked.
        # O_NONBLOCK: a pipe put there since does not hang the request (it is refused below).
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        descriptor = os.open(real, flags)
    except (OSError, RuntimeError):
        raise gone from None
    handle = os.fdopen(descriptor, "rb")
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        handle.close()
        raise gone
    return handle


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
