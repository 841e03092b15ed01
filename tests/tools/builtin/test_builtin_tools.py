import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from agents_app.core.errors import DomainError
from tools_app.builtin import ListFilesTool, register_builtin_tools
from tools_app.process_registry import get_registry
from tools_app.registry import ToolContext, ToolRegistry, ToolResult

FILE_MAX_BYTES = 64
CODE_TOOLS = {"git", "git_commit", "run_command", "run_python"}
BUILTIN_NAMES = [
    "finish_task",
    "git",
    "git_commit",
    "http_get",
    "list_files",
    "read_file",
    "run_command",
    "run_python",
    "start_micro_agent",
    "write_file",
]


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
    return tmp_path / "workspace"


@pytest.fixture
def context(workspace: Path) -> ToolContext:
    return ToolContext(run_id=1, workspace=workspace, timeout=5.0)


def call(registry: ToolRegistry, context: ToolContext, name: str, **arguments) -> ToolResult:
    result = registry.call(name, arguments, context)
    json.dumps(result.content)  # whatever a tool returns must be JSON-serialisable
    return result


# --- read, write, list ---------------------------------------------------------------------------


def test_it_reads_back_what_it_wrote(registry, context):
    written = call(registry, context, "write_file", path="notes.txt", content="héllo\n")
    read = call(registry, context, "read_file", path="notes.txt")

    assert written.ok
    assert written.content == {"path": "notes.txt", "bytes_written": 7, "appended": False}
    assert read.ok
    assert read.content == {
        "path": "notes.txt",
        "content": "héllo\n",
        "size": 7,
        "truncated": False,
    }


def test_it_creates_the_workspace_when_it_is_missing(registry, context, workspace):
    assert not workspace.exists()

    result = call(registry, context, "list_files")

    assert result.ok
    assert result.content == {"path": ".", "entries": [], "truncated": False}
    assert workspace.is_dir()


def test_it_replaces_a_file_unless_asked_to_append(registry, context, workspace):
    call(registry, context, "write_file", path="log.txt", content="one\n")
    call(registry, context, "write_file", path="log.txt", content="two\n", append=True)
    assert (workspace / "log.txt").read_text() == "one\ntwo\n"

    call(registry, context, "write_file", path="log.txt", content="three\n")
    assert (workspace / "log.txt").read_text() == "three\n"


def test_it_creates_parent_directories_when_writing(registry, context, workspace):
    result = call(registry, context, "write_file", path="a/b/c.txt", content="deep")

    assert result.ok
    assert result.content["path"] == "a/b/c.txt"
    assert (workspace / "a" / "b" / "c.txt").read_text() == "deep"


def test_it_lists_one_level_by_default_and_everything_when_recursive(registry, context):
    call(registry, context, "write_file", path="top.txt", content="12345")
    call(registry, context, "write_file", path="sub/inner.txt", content="abc")

    flat = call(registry, context, "list_files")
    deep = call(registry, context, "list_files", path=".", recursive=True)

    assert flat.content["entries"] == [
        {"path": "sub", "type": "dir", "size": None},
        {"path": "top.txt", "type": "file", "size": 5},
    ]
    assert deep.content["entries"] == [
        {"path": "sub", "type": "dir", "size": None},
        {"path": "sub/inner.txt", "type": "file", "size": 3},
        {"path": "top.txt", "type": "file", "size": 5},
    ]


def test_it_lists_a_subdirectory_with_paths_relative_to_the_workspace(registry, context):
    call(registry, context, "write_file", path="sub/inner.txt", content="abc")

    result = call(registry, context, "list_files", path="sub")

    assert result.content["path"] == "sub"
    assert result.content["entries"] == [{"path": "sub/inner.txt", "type": "file", "size": 3}]


def test_it_accepts_a_path_that_wanders_but_stays_inside(registry, context):
    call(registry, context, "write_file", path="sub/../kept.txt", content="x")

    result = call(registry, context, "read_file", path="./sub/../kept.txt")

    assert result.ok
    assert result.content["path"] == "kept.txt"


def test_it_truncates_a_listing_at_the_entry_limit(context, workspace):
    workspace.mkdir()
    for index in range(5):
        (workspace / f"file{index}.txt").write_text("x")
    registry = ToolRegistry()
    registry.register(ListFilesTool(max_entries=3))

    result = call(registry, context, "list_files")

    assert result.content["truncated"] is True
    assert [e["path"] for e in result.content["entries"]] == ["file0.txt", "file1.txt", "file2.txt"]


def test_it_does_not_flag_a_listing_that_fits_exactly(context, workspace):
    workspace.mkdir()
    for index in range(3):
        (workspace / f"file{index}.txt").write_text("x")
    registry = ToolRegistry()
    registry.register(ListFilesTool(max_entries=3))

    result = call(registry, context, "list_files")

    assert result.content["truncated"] is False
    assert len(result.content["entries"]) == 3


# --- limits and missing files --------------------------------------------------------------------


def test_it_reads_only_the_first_bytes_of_a_large_file_and_says_so(registry, context, workspace):
    workspace.mkdir()
    (workspace / "big.txt").write_text("a" * FILE_MAX_BYTES + "tail")

    result = call(registry, context, "read_file", path="big.txt")

    assert result.ok
    assert result.content["content"] == "a" * FILE_MAX_BYTES
    assert result.content["size"] == FILE_MAX_BYTES + 4
    assert result.content["truncated"] is True


def test_it_refuses_to_write_content_over_the_limit(registry, context, workspace):
    result = call(
        registry, context, "write_file", path="big.txt", content="a" * (FILE_MAX_BYTES + 1)
    )

    assert not result.ok
    assert f"at most {FILE_MAX_BYTES} bytes" in result.error
    assert not (workspace / "big.txt").exists()


def test_it_counts_the_limit_in_utf8_bytes_not_characters(registry, context):
    result = call(registry, context, "write_file", path="e.txt", content="é" * FILE_MAX_BYTES)

    assert not result.ok
    assert f"{FILE_MAX_BYTES * 2} bytes" in result.error


def test_it_reports_a_missing_file_clearly(registry, context):
    result = call(registry, context, "read_file", path="nope.txt")

    assert not result.ok
    assert result.error == "File 'nope.txt' does not exist in the workspace"


def test_it_reports_a_missing_directory_clearly(registry, context):
    result = call(registry, context, "list_files", path="nowhere")

    assert not result.ok
    assert result.error == "Directory 'nowhere' does not exist in the workspace"


def test_it_refuses_to_read_a_directory(registry, context):
    call(registry, context, "write_file", path="sub/x.txt", content="x")

    result = call(registry, context, "read_file", path="sub")

    assert not result.ok
    assert "is a directory" in result.error


# --- the workspace boundary ----------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["read_file", "write_file", "list_files"])
def test_it_refuses_a_path_that_climbs_out_of_the_workspace(registry, context, tool, tmp_path):
    (tmp_path / "x").write_text("secret")
    arguments = {"path": "../x"}
    if tool == "write_file":
        arguments["content"] = "overwritten"

    result = registry.call(tool, arguments, context)

    assert not result.ok
    assert result.error == "Path '../x' is outside the workspace; use a relative path inside it"
    assert (tmp_path / "x").read_text() == "secret"


def test_it_refuses_an_absolute_path_outside_the_workspace(registry, context):
    result = call(registry, context, "read_file", path="/etc/passwd")

    assert not result.ok
    assert "outside the workspace" in result.error


def test_it_refuses_to_write_an_absolute_path_outside_the_workspace(registry, context, tmp_path):
    target = tmp_path / "elsewhere.txt"

    result = call(registry, context, "write_file", path=str(target), content="x")

    assert not result.ok
    assert "outside the workspace" in result.error
    assert not target.exists()


def test_it_accepts_an_absolute_path_inside_the_workspace(registry, context, workspace):
    call(registry, context, "write_file", path="inside.txt", content="ok")

    result = call(registry, context, "read_file", path=str(workspace / "inside.txt"))

    assert result.ok
    assert result.content["content"] == "ok"


def test_it_refuses_a_symlink_inside_the_workspace_pointing_outside(
    registry, context, workspace, tmp_path
):
    (tmp_path / "secret.txt").write_text("secret")
    workspace.mkdir()
    (workspace / "link.txt").symlink_to(tmp_path / "secret.txt")

    read = call(registry, context, "read_file", path="link.txt")
    write = call(registry, context, "write_file", path="link.txt", content="pwned")

    assert not read.ok
    assert "outside the workspace" in read.error
    assert not write.ok
    assert (tmp_path / "secret.txt").read_text() == "secret"


def test_it_refuses_to_write_through_a_symlinked_directory_pointing_outside(
    registry, context, workspace, tmp_path
):
    outside = tmp_path / "outside"
    outside.mkdir()
    workspace.mkdir()
    (workspace / "door").symlink_to(outside, target_is_directory=True)

    result = call(registry, context, "write_file", path="door/planted.txt", content="x")

    assert not result.ok
    assert "outside the workspace" in result.error
    assert not (outside / "planted.txt").exists()


def test_it_refuses_to_write_through_a_dangling_symlink_pointing_outside(
    registry, context, workspace, tmp_path
):
    workspace.mkdir()
    (workspace / "dangling.txt").symlink_to(tmp_path / "not-yet.txt")

    result = call(registry, context, "write_file", path="dangling.txt", content="x")

    assert not result.ok
    assert "outside the workspace" in result.error
    assert not (tmp_path / "not-yet.txt").exists()


def test_it_follows_a_symlink_that_stays_inside_the_workspace(registry, context, workspace):
    call(registry, context, "write_file", path="real.txt", content="real")
    (workspace / "alias.txt").symlink_to(workspace / "real.txt")

    result = call(registry, context, "read_file", path="alias.txt")

    assert result.ok
    assert result.content == {"path": "real.txt", "content": "real", "size": 4, "truncated": False}


def test_it_leaves_symlinks_leading_outside_out_of_a_listing(
    registry, context, workspace, tmp_path
):
    (tmp_path / "secret.txt").write_text("secret")
    workspace.mkdir()
    (workspace / "link.txt").symlink_to(tmp_path / "secret.txt")
    (workspace / "door").symlink_to(tmp_path, target_is_directory=True)
    (workspace / "mine.txt").write_text("mine")

    result = call(registry, context, "list_files", recursive=True)

    assert result.content["entries"] == [{"path": "mine.txt", "type": "file", "size": 4}]


def test_it_refuses_a_path_with_a_nul_byte_as_invalid_arguments(registry, context):
    with pytest.raises(DomainError) as caught:
        call(registry, context, "read_file", path="a\x00b")

    assert caught.value.code == "INVALID_ARGUMENTS"
    assert "'path' must not contain NUL" in caught.value.message


def test_it_refuses_a_path_with_a_lone_surrogate_as_invalid_arguments(registry, context):
    with pytest.raises(DomainError) as caught:
        call(registry, context, "write_file", path="bad\udcff.md", content="x")

    assert caught.value.code == "INVALID_ARGUMENTS"
    assert caught.value.message == (
        "Invalid arguments for tool 'write_file': 'path' must be valid UTF-8 "
        "(it holds a lone surrogate such as \\ud800)"
    )
    assert caught.value.details["errors"][0]["path"] == "path"


# --- finish_task -------------------------------------------------------------------------------


def test_finish_task_hands_back_the_answer_and_ends_the_task(registry, context):
    result = call(registry, context, "finish_task", result="42")

    assert result.ok
    assert result.finish is True
    assert result.content == {"result": "42", "success": True}


def test_finish_task_can_report_that_the_task_failed(registry, context):
    result = call(registry, context, "finish_task", result="the site was down", success=False)

    assert result.ok
    assert result.finish is True
    assert result.content == {"result": "the site was down", "success": False}


# --- the registry --------------------------------------------------------------------------------


def test_it_registers_every_builtin_tool(registry):
    assert registry.names() == BUILTIN_NAMES


def test_every_builtin_schema_is_a_closed_valid_json_schema(registry):
    for tool in registry.all():
        jsonschema.Draft202012Validator.check_schema(tool.spec.input_schema)
        assert tool.spec.input_schema["type"] == "object"
        assert tool.spec.input_schema["additionalProperties"] is False
        assert tool.spec.description
        json.dumps(tool.spec.as_dict())


def test_it_finds_tools_by_capability_in_any_case(registry):
    assert [t.spec.name for t in registry.for_capabilities(["file_write"])] == ["write_file"]
    assert [t.spec.name for t in registry.for_capabilities(["FILE_READ"])] == [
        "list_files",
        "read_file",
    ]
    assert [t.spec.name for t in registry.for_capabilities(["WEB_FETCH", "FINISH"])] == [
        "finish_task",
        "http_get",
    ]


def test_it_finds_tools_by_domain(registry):
    assert [t.spec.name for t in registry.for_domain("file_operations")] == [
        "list_files",
        "read_file",
        "write_file",
    ]
    assert [t.spec.name for t in registry.for_domain("web")] == ["http_get"]
    assert [t.spec.name for t in registry.for_domain("control")] == [
        "finish_task",
        "start_micro_agent",
    ]
    assert [t.spec.name for t in registry.for_domain("code")] == [
        "git",
        "git_commit",
        "run_command",
        "run_python",
    ]


def test_without_sandbox_tools_the_code_tools_are_not_registered_at_all(settings):
    settings.SANDBOX_TOOLS = False
    registry = ToolRegistry()
    register_builtin_tools(
        registry, file_max_bytes=1, http_max_bytes=1, http_timeout=1.0, http_allow_private=False
    )

    names = sorted(t.spec.name for t in registry.all())
    assert names == [n for n in BUILTIN_NAMES if n not in CODE_TOOLS]
    assert registry.for_domain("code") == []


def test_without_the_micro_agent_tool_start_micro_agent_is_not_registered(settings):
    settings.MICRO_AGENT_TOOL = False
    registry = ToolRegistry()
    register_builtin_tools(
        registry, file_max_bytes=1, http_max_bytes=1, http_timeout=1.0, http_allow_private=False
    )

    names = sorted(t.spec.name for t in registry.all())
    assert names == [n for n in BUILTIN_NAMES if n != "start_micro_agent"]


def test_the_embedded_small_model_is_not_offered_the_code_or_micro_agent_tools_unless_asked():
    # config/settings.py: SANDBOX_TOOLS defaults to "not LOCAL_MODEL_IN_USE".
    def sandbox_tools(**env: str) -> str:
        code = (
            "from django.conf import settings; "
            "print(settings.SANDBOX_TOOLS, settings.MICRO_AGENT_TOOL)"
        )
        environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", **env}
        environment.pop("LLM_BASE_URL", None)
        ran = subprocess.run(
            [sys.executable, "-c", f"import django; django.setup(); {code}"],
            env=environment, capture_output=True, text=True, check=True,
        )  # fmt: skip
        return ran.stdout.strip()

    assert sandbox_tools(LOCAL_MODEL="") == "True True"
    assert sandbox_tools(LOCAL_MODEL="model.gguf") == "False False"
    assert sandbox_tools(LOCAL_MODEL="model.gguf", SANDBOX_TOOLS="true") == "True False"
    assert sandbox_tools(LOCAL_MODEL="model.gguf", MICRO_AGENT_TOOL="true") == "False True"


def test_it_names_the_available_tools_when_one_is_not_found(registry, context):
    with pytest.raises(DomainError) as caught:
        registry.call("delete_everything", {}, context)

    assert caught.value.code == "TOOL_NOT_FOUND"
    assert caught.value.details == {
        "requested_tool": "delete_everything",
        "available_tools": BUILTIN_NAMES,
    }


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("read_file", {"path": 3}),
        ("read_file", {}),
        ("read_file", {"path": "a.txt", "encoding": "latin-1"}),
        ("write_file", {"path": "a.txt"}),
        ("write_file", {"path": "a.txt", "content": "x", "append": "yes"}),
        ("list_files", {"recursive": 1}),
        ("http_get", {"url": "https://example.com", "headers": {"X-Count": 3}}),
        ("finish_task", {"success": True}),
    ],
)
def test_it_rejects_arguments_that_do_not_fit_the_schema(registry, context, name, arguments):
    with pytest.raises(DomainError) as caught:
        registry.call(name, arguments, context)

    assert caught.value.code == "INVALID_ARGUMENTS"
    assert caught.value.details["tool"] == name
    assert caught.value.details["errors"]


def test_the_default_registry_has_the_builtin_tools():
    assert get_registry().names() == BUILTIN_NAMES


def test_write_file_refuses_a_fifo_at_once_and_never_follows_a_link(registry, context, workspace):
    # What sandboxed code (run_python) may leave in a workspace for the root-side tools.
    workspace.mkdir(parents=True)
    os.mkfifo(workspace / "report.md")
    outside = workspace.parent / "outside.txt"
    outside.write_text("untouched")
    (workspace / "link.txt").symlink_to(outside)

    fifo = call(registry, context, "write_file", path="report.md", content="x")
    linked = call(registry, context, "write_file", path="link.txt", content="x")

    assert not fifo.ok and "Could not write 'report.md'" in fifo.error
    assert not linked.ok
    assert outside.read_text() == "untouched"
