"""The file tools: read, write and list, each confined to the run's workspace."""

import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tools_app.registry import (
    ApprovalLevel,
    SideEffects,
    Tool,
    ToolContext,
    ToolError,
    ToolResult,
    ToolSpec,
)

LIST_MAX_ENTRIES = 1000

WORKSPACE_RULE = (
    "Paths are relative to the run's workspace directory; anything that resolves outside it "
    "(absolute paths elsewhere, '..', symlinks pointing out) is refused."
)


def _workspace_root(context: ToolContext) -> Path:
    try:
        context.workspace.mkdir(parents=True, exist_ok=True)
        return context.workspace.resolve(strict=True)
    except OSError as exc:  # a file where the workspace or one of its parents should be
        raise ToolError(f"The run's workspace cannot be used: {exc.strerror}") from None


def _resolve_in_workspace(root: Path, requested: str) -> Path:
    """The real path `requested` names, following every symlink, or ToolError if it escapes."""
    try:
        # A dangling symlink is followed too (realpath semantics), so it cannot point a write out.
        resolved = (root / requested).resolve(strict=False)
        # A name the file system cannot hold (over 255 bytes) is refused here, where it is
        # named, not by the is_dir or exists that follows, which raise on it.
        resolved.exists()
    except RuntimeError:  # pathlib's word for a symlink loop
        raise ToolError(f"Invalid path '{requested}': a symlink loop") from None
    except ValueError as exc:  # a NUL byte (the registry refuses it before a tool runs)
        raise ToolError(f"Invalid path '{requested}': {exc}") from None
    except OSError as exc:
        raise ToolError(f"Invalid path '{requested}': {exc.strerror}") from None
    if not resolved.is_relative_to(root):
        raise ToolError(
            f"Path '{requested}' is outside the workspace; use a relative path inside it"
        )
    return resolved


def _outside_git(root: Path, requested: str, path: Path) -> None:
    """ToolError when `requested` (as given, or where it resolves) passes through a `.git`: the
    git tool is approved without a person because it checks the repository's config before
    git starts, which holds only while nothing but git writes the repository's own files."""
    named = Path(requested).parts + path.relative_to(root).parts
    # Case-folded: `.GIT` is the same directory where the file system ignores case.
    if any(part.casefold() == ".git" for part in named):
        raise ToolError(
            f"Invalid path '{requested}': the repository's own files are written by git only "
            "(no path through a '.git' directory or file)"
        )


def _relative(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix() or "."


class ReadFileTool(Tool):
    def __init__(self, *, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.spec = ToolSpec(
            name="read_file",
            description=(
                "Read a text file from the workspace and return its contents (UTF-8; undecodable "
                f"bytes are replaced). Files larger than {max_bytes} bytes are cut off at that "
                "size and the result says truncated=true. " + WORKSPACE_RULE
            ),
            input_schema={
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": "File path relative to the workspace, e.g. 'notes/todo.md'.",
                    },
                },
                "required": ["path"],
                "additionalProperties": False,
            },
            capabilities=frozenset({"FILE_READ"}),
            domain="file_operations",
            side_effects=SideEffects.READ_ONLY,
            approval_level=ApprovalLevel.AUTO,
        )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        root = _workspace_root(context)
        requested = arguments["path"]
        path = _resolve_in_workspace(root, requested)
        if path.is_dir():
            raise ToolError(f"'{requested}' is a directory; use list_files to see what it holds")
        if not path.is_file():
            raise ToolError(f"File '{requested}' does not exist in the workspace")
        try:
            with path.open("rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                data = handle.read(self.max_bytes)
        except OSError as exc:
            raise ToolError(f"Could not read '{requested}': {exc.strerror or exc}") from None
        return ToolResult(
            ok=True,
            content={
                "path": _relative(root, path),
                "content": data.decode("utf-8", errors="replace"),
                "size": size,
                "truncated": size > len(data),
            },
        )


class WriteFileTool(Tool):
    def __init__(self, *, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.spec = ToolSpec(
            name="write_file",
            description=(
                "Write text (UTF-8) to a file in the workspace, creating missing parent "
                "directories. Replaces the file unless append=true, which adds to its end. "
                f"Content over {max_bytes} bytes is refused. Returns the number of bytes written. "
                "A path through '.git' is refused: only git writes the repository's own files. "
                + WORKSPACE_RULE
            ),
            input_schema={
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": "File path relative to the workspace, e.g. 'out/report.md'.",
                    },
                    "content": {"type": "string", "description": "The text to write."},
                    "append": {
                        "type": "boolean",
                        "default": False,
                        "description": "Add to the end of the file instead of replacing it.",
                    },
                },
                "required": ["path", "content"],
                "additionalProperties": False,
            },
            capabilities=frozenset({"FILE_WRITE"}),
            domain="file_operations",
            side_effects=SideEffects.WORKSPACE_WRITE,
            approval_level=ApprovalLevel.AUTO,
        )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        root = _workspace_root(context)
        requested = arguments["path"]
        append = arguments.get("append", False)
        data = arguments["content"].encode("utf-8")
        if len(data) > self.max_bytes:
            raise ToolError(
                f"Content is {len(data)} bytes; write_file accepts at most {self.max_bytes} "
                "bytes per call (write the rest with append=true)"
            )
        path = _resolve_in_workspace(root, requested)
        _outside_git(root, requested, path)
        if path == root or path.is_dir():
            raise ToolError(f"'{requested}' is a directory; give a file path")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Sandboxed code may have left a FIFO or a link here: never follow the link, never
            # wait for a reader (a FIFO without one fails at once), write only a regular file.
            flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
            flags |= os.O_APPEND if append else os.O_TRUNC
            descriptor = os.open(path, flags, 0o644)
            with os.fdopen(descriptor, "wb") as handle:
                if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                    raise ToolError(f"'{requested}' is not a regular file")
                handle.write(data)
        except OSError as exc:
            raise ToolError(f"Could not write '{requested}': {exc.strerror or exc}") from None
        return ToolResult(
            ok=True,
            content={"path": _relative(root, path), "bytes_written": len(data), "appended": append},
        )


class ListFilesTool(Tool):
    def __init__(self, *, max_entries: int = LIST_MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self.spec = ToolSpec(
            name="list_files",
            description=(
                "List the files and directories under a workspace directory (default: the "
                "workspace itself), sorted by path; recursive=true includes everything below it. "
                "Each entry has path (relative to the workspace), type ('file' or 'dir') and size "
                f"in bytes (null for dirs). At most {max_entries} entries are returned; "
                "truncated=true means there are more. Symlinks leading outside the workspace are "
                "left out. " + WORKSPACE_RULE
            ),
            input_schema={
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "default": ".",
                        "description": "Directory relative to the workspace; '.' is the workspace.",
                    },
                    "recursive": {
                        "type": "boolean",
                        "default": False,
                        "description": "Also list the contents of subdirectories.",
                    },
                },
                "additionalProperties": False,
            },
            capabilities=frozenset({"FILE_READ", "FILE_LIST"}),
            domain="file_operations",
            side_effects=SideEffects.READ_ONLY,
            approval_level=ApprovalLevel.AUTO,
        )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        root = _workspace_root(context)
        requested = arguments.get("path") or "."
        directory = _resolve_in_workspace(root, requested)
        if not directory.exists():
            raise ToolError(f"Directory '{requested}' does not exist in the workspace")
        if not directory.is_dir():
            raise ToolError(f"'{requested}' is a file, not a directory; use read_file to read it")
        entries: list[dict[str, Any]] = []
        truncated = False
        for entry in self._walk(root, directory, arguments.get("recursive", False)):
            if len(entries) == self.max_entries:
                truncated = True
                break
            entries.append(entry)
        return ToolResult(
            ok=True,
            content={
                "path": _relative(root, directory),
                "entries": entries,
                "truncated": truncated,
            },
        )

    def _walk(self, root: Path, directory: Path, recursive: bool) -> Iterable[dict[str, Any]]:
        try:
            children = sorted(os.scandir(directory), key=lambda child: child.name)
        except OSError as exc:
            raise ToolError(
                f"Could not list '{_relative(root, directory)}': {exc.strerror}"
            ) from None
        for child in children:
            shown = directory / child.name
            real = Path(os.path.realpath(shown))
            if not real.is_relative_to(root) or not real.exists():
                continue
            if real.is_dir():
                yield {"path": _relative(root, shown), "type": "dir", "size": None}
                # Symlinked directories are listed but not entered: no loops, no double counting.
                if recursive and not child.is_symlink():
                    yield from self._walk(root, shown, recursive)
            else:
                yield {"path": _relative(root, shown), "type": "file", "size": real.stat().st_size}
