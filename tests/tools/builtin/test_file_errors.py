"""The file tools when the file system says no: a name too long, a symlink loop, a file the
kernel will not read, a directory that cannot be listed, a workspace that cannot be made, a
path the schema refuses. Each comes back as the tool's own error, saying what went wrong
(what the model reads to correct its next call), never an exception's repr that names the
host's paths; and a listing cut at its limit stops walking the tree."""

import errno
import json
import os
import sys
from pathlib import Path

import pytest

from agents_app.core.errors import DomainError
from tools_app.builtin import ListFilesTool, ReadFileTool, register_builtin_tools
from tools_app.builtin import files as files_module
from tools_app.registry import ToolContext, ToolError, ToolRegistry, ToolResult

FILE_MAX_BYTES = 64
TOO_LONG = "x" * 256  # one byte over what a name may hold (NAME_MAX)


@pytest.fixture
def registry() -> ToolRegistry:
    registry = ToolRegistry()
    register_builtin_tools(
        registry,
        file_max_bytes=FILE_MAX_BYTES,
        http_max_bytes=1000,
        http_timeout=2.0,
        http_allow_private=False,
    )
    return registry


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    return path


@pytest.fixture
def context(workspace: Path) -> ToolContext:
    return ToolContext(run_id=1, workspace=workspace, timeout=5.0)


def call(registry: ToolRegistry, context: ToolContext, name: str, **arguments) -> ToolResult:
    result = registry.call(name, arguments, context)
    json.dumps(result.content)
    return result


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("read_file", {}),
        ("write_file", {"content": "x"}),
        ("list_files", {}),
    ],
)
def test_a_name_too_long_for_the_file_system_is_an_invalid_path(registry, context, name, arguments):
    result = call(registry, context, name, path=TOO_LONG, **arguments)

    assert not result.ok
    assert result.error == f"Invalid path '{TOO_LONG}': File name too long"


def test_a_directory_too_long_to_name_is_an_invalid_path_for_a_write(registry, context, workspace):
    result = call(registry, context, "write_file", path=f"{TOO_LONG}/a.txt", content="x")

    assert not result.ok
    assert result.error == f"Invalid path '{TOO_LONG}/a.txt': File name too long"
    assert list(workspace.iterdir()) == []


@pytest.mark.parametrize("name", ["read_file", "list_files"])
def test_a_symlink_loop_is_an_invalid_path(registry, context, workspace, name):
    (workspace / "loop").symlink_to(workspace / "loop")

    result = call(registry, context, name, path="loop")

    assert not result.ok
    assert result.error == "Invalid path 'loop': a symlink loop"


def test_a_tool_run_without_the_registry_still_refuses_a_nul_byte(context):
    # The registry refuses NUL before a tool runs; a tool run directly refuses it itself.
    with pytest.raises(ToolError) as caught:
        ReadFileTool(max_bytes=FILE_MAX_BYTES).run({"path": "a\x00b"}, context)

    assert str(caught.value) == "Invalid path 'a\x00b': embedded null byte"


@pytest.mark.parametrize("name", ["read_file", "write_file"])
def test_an_empty_path_is_refused_by_the_schema(registry, context, name):
    arguments = {"path": ""} if name == "read_file" else {"path": "", "content": "x"}

    with pytest.raises(DomainError) as caught:
        registry.call(name, arguments, context)

    assert caught.value.code == "INVALID_ARGUMENTS"
    assert caught.value.details["errors"] == [{"path": "path", "message": "'' should be non-empty"}]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/mem is Linux's")
def test_a_file_the_kernel_refuses_to_read_is_a_read_error(registry):
    # /proc/self/mem is a regular file even root cannot read at offset 0 (no memory is
    # mapped there): the read fails with EIO after the checks that the file exists passed.
    context = ToolContext(run_id=1, workspace=Path("/proc/self"), timeout=5.0)

    result = call(registry, context, "read_file", path="mem")

    assert not result.ok
    assert result.error == "Could not read 'mem': Input/output error"


def test_a_write_below_a_file_is_a_write_error(registry, context, workspace):
    (workspace / "notes").write_text("a file")

    result = call(registry, context, "write_file", path="notes/2024/today.md", content="x")

    assert not result.ok
    assert result.error == "Could not write 'notes/2024/today.md': Not a directory"
    assert (workspace / "notes").read_text() == "a file"


def _scandir_refusing(monkeypatch, refused: Path) -> list[Path]:
    """os.scandir as the file tools see it, refusing `refused` as the kernel refuses a
    directory without read permission to a worker that is not root; returns the directories
    scanned."""
    scanned: list[Path] = []
    scandir = os.scandir

    def guarded(path):
        scanned.append(Path(path))
        if Path(path) == refused:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return scandir(path)

    monkeypatch.setattr(files_module.os, "scandir", guarded)
    return scanned


@pytest.mark.parametrize("recursive", [False, True])
def test_a_directory_that_cannot_be_listed_is_a_list_error(
    registry, context, workspace, monkeypatch, recursive
):
    (workspace / "locked").mkdir()
    (workspace / "locked" / "a.txt").write_text("x")
    _scandir_refusing(monkeypatch, workspace / "locked")

    path = "." if recursive else "locked"
    result = call(registry, context, "list_files", path=path, recursive=recursive)

    assert not result.ok
    assert result.error == "Could not list 'locked': Permission denied"


def test_a_listing_cut_at_its_limit_walks_no_further(context, workspace, monkeypatch):
    # A workspace of a million files costs a listing its limit, not the whole tree: once the
    # entry past the limit is seen (b's first: the listing is truncated), nothing more is
    # read, so a directory further on that cannot be listed is no error.
    for name in ("a", "b", "c"):
        (workspace / name).mkdir()
        (workspace / name / "f.txt").write_text("x")
    scanned = _scandir_refusing(monkeypatch, workspace / "c")
    registry = ToolRegistry()
    registry.register(ListFilesTool(max_entries=3))

    result = call(registry, context, "list_files", recursive=True)

    assert result.ok
    assert result.content["truncated"] is True
    assert [e["path"] for e in result.content["entries"]] == ["a", "a/f.txt", "b"]
    assert scanned == [workspace, workspace / "a", workspace / "b"]


@pytest.mark.parametrize("name", ["read_file", "write_file", "list_files"])
def test_a_workspace_below_a_file_is_the_tools_error(registry, tmp_path, name):
    (tmp_path / "runs").write_text("a file where the workspaces' directory should be")
    context = ToolContext(run_id=1, workspace=tmp_path / "runs" / "run-1", timeout=5.0)
    arguments = {"path": "a.txt"} if name != "list_files" else {}
    if name == "write_file":
        arguments["content"] = "x"

    result = call(registry, context, name, **arguments)

    assert not result.ok
    assert result.error == "The run's workspace cannot be used: Not a directory"
