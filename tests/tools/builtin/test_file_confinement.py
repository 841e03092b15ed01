"""The file tools at their edges: limits met exactly, writes that cannot happen, and the
symlinks a listing shows, skips or does not enter."""

import json
from pathlib import Path

import pytest

from tools_app.builtin import register_builtin_tools
from tools_app.registry import ToolContext, ToolRegistry, ToolResult

FILE_MAX_BYTES = 64


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


def test_a_file_of_exactly_the_read_limit_is_read_whole(registry, context, workspace):
    (workspace / "full.txt").write_text("a" * FILE_MAX_BYTES)
    result = call(registry, context, "read_file", path="full.txt")
    assert result.content == {
        "path": "full.txt",
        "content": "a" * FILE_MAX_BYTES,
        "size": FILE_MAX_BYTES,
        "truncated": False,
    }


def test_content_of_exactly_the_write_limit_is_written(registry, context, workspace):
    result = call(registry, context, "write_file", path="full.txt", content="a" * FILE_MAX_BYTES)
    assert result.ok and result.content["bytes_written"] == FILE_MAX_BYTES
    assert (workspace / "full.txt").read_text() == "a" * FILE_MAX_BYTES


def test_a_write_whose_parent_is_a_file_fails_with_a_reason(registry, context, workspace):
    (workspace / "notes").write_text("a file")
    result = call(registry, context, "write_file", path="notes/today.md", content="x")
    assert not result.ok
    assert result.error.startswith("Could not write 'notes/today.md'")
    assert (workspace / "notes").read_text() == "a file"


@pytest.mark.parametrize("path", [".", "sub"])
def test_a_write_to_a_directory_is_refused(registry, context, workspace, path):
    (workspace / "sub").mkdir()
    result = call(registry, context, "write_file", path=path, content="x")
    assert not result.ok
    assert result.error == f"'{path}' is a directory; give a file path"


@pytest.mark.parametrize(
    "path",
    [
        ".git/config",
        ".git/hooks/pre-commit",
        ".git",
        "sub/.git/config",
        "./.GIT/config",
        "x/../.git/info/attributes",
        "to-git/config",
    ],
)
def test_a_write_through_a_git_directory_is_refused(registry, context, workspace, path):
    """The git tool checks the repository's config before git starts; nothing but git may
    write the repository's files, or an auto tool could change them in between."""
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (workspace / "to-git").symlink_to(workspace / ".git")

    result = call(registry, context, "write_file", path=path, content="[core]\n\tpager = x\n")

    assert not result.ok
    assert result.error == (
        f"Invalid path '{path}': the repository's own files are written by git only "
        "(no path through a '.git' directory or file)"
    )
    assert (workspace / ".git" / "config").read_text() == "[core]\n\tbare = false\n"
    assert not (workspace / "sub").exists() and not (workspace / ".GIT").exists()


def test_a_file_whose_name_only_starts_with_git_is_written(registry, context, workspace):
    for path in (".gitignore", ".github/workflows/ci.yml", "git/config", "a.git"):
        assert call(registry, context, "write_file", path=path, content="x").ok, path


def test_appending_adds_to_the_end_and_says_so(registry, context, workspace):
    call(registry, context, "write_file", path="log.txt", content="one\n")
    result = call(registry, context, "write_file", path="log.txt", content="two\n", append=True)
    assert result.content == {"path": "log.txt", "bytes_written": 4, "appended": True}
    assert (workspace / "log.txt").read_text() == "one\ntwo\n"


def test_a_listing_of_a_file_is_refused(registry, context, workspace):
    (workspace / "a.txt").write_text("x")
    result = call(registry, context, "list_files", path="a.txt")
    assert not result.ok
    assert result.error.startswith("'a.txt' is a file, not a directory")


def test_the_workspace_itself_is_listed_as_dot(registry, context, workspace):
    (workspace / "a.txt").write_text("xy")
    result = call(registry, context, "list_files")
    assert result.content == {
        "path": ".",
        "entries": [{"path": "a.txt", "type": "file", "size": 2}],
        "truncated": False,
    }


def test_a_symlinked_directory_inside_is_listed_but_not_entered(registry, context, workspace):
    (workspace / "real").mkdir()
    (workspace / "real" / "a.txt").write_text("x")
    (workspace / "alias").symlink_to(workspace / "real", target_is_directory=True)
    result = call(registry, context, "list_files", recursive=True)
    assert result.content["entries"] == [
        {"path": "alias", "type": "dir", "size": None},
        {"path": "real", "type": "dir", "size": None},
        {"path": "real/a.txt", "type": "file", "size": 1},
    ]


def test_a_dangling_symlink_inside_is_left_out_of_a_listing(registry, context, workspace):
    (workspace / "gone.txt").symlink_to(workspace / "never-written.txt")
    (workspace / "here.txt").write_text("x")
    result = call(registry, context, "list_files")
    assert [e["path"] for e in result.content["entries"]] == ["here.txt"]


def test_a_listing_is_sorted_by_name_at_every_level(registry, context, workspace):
    for name in ("b/z.txt", "b/a.txt", "a.txt", "c.txt"):
        call(registry, context, "write_file", path=name, content="x")
    result = call(registry, context, "list_files", recursive=True)
    assert [e["path"] for e in result.content["entries"]] == [
        "a.txt",
        "b",
        "b/a.txt",
        "b/z.txt",
        "c.txt",
    ]


def test_the_tools_tell_the_model_that_append_and_recursive_are_off_unless_asked(registry):
    write = registry.get("write_file").spec.input_schema["properties"]
    listing = registry.get("list_files").spec.input_schema["properties"]
    assert write["append"]["default"] is False
    assert listing["recursive"]["default"] is False


def test_a_workspace_whose_parents_are_missing_too_is_created(registry, tmp_path):
    context = ToolContext(run_id=1, workspace=tmp_path / "users" / "7" / "run-1", timeout=5.0)
    result = call(registry, context, "write_file", path="a.txt", content="x")
    assert result.ok
    assert (tmp_path / "users" / "7" / "run-1" / "a.txt").read_text() == "x"


def test_a_one_letter_path_is_a_path(registry, context, workspace):
    assert call(registry, context, "write_file", path="a", content="x").ok
    assert call(registry, context, "read_file", path="a").content["content"] == "x"
    (workspace / "d").mkdir()
    assert call(registry, context, "list_files", path="d").ok


def test_the_builtin_listing_holds_a_thousand_entries_as_its_description_says(
    registry, context, workspace
):
    # The limit keeps a listing of a big workspace from filling the model's context.
    for index in range(1001):
        (workspace / f"f{index:04}.txt").touch()

    result = call(registry, context, "list_files")

    assert "At most 1000 entries are returned" in registry.get("list_files").spec.description
    assert result.content["truncated"] is True
    assert len(result.content["entries"]) == 1000
    assert result.content["entries"][-1]["path"] == "f0999.txt"
