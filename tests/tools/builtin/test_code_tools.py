"""run_python, run_command, git and git_commit against real bubblewrap: what they return, their
approval levels, and what happens where the sandbox cannot start."""

import json
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.sandbox import sandbox_processes, working_sandbox
from tools_app.builtin import GitCommitTool, GitTool, RunCommandTool, RunPythonTool
from tools_app.models import Tool, ToolSource
from tools_app.registry import ToolContext, ToolRegistry, ToolResult
from tools_app.risk import classify_call
from tools_app.sandbox import Limits, Sandbox
from tools_app.selectors import configured_specs

CODE_TOOLS = ("run_python", "run_command", "git", "git_commit")


def registry_of(sandbox: Sandbox, **limits) -> ToolRegistry:
    if limits:
        sandbox = Sandbox(
            bwrap=sandbox.bwrap,
            limits=replace(sandbox.limits, **limits),
            slots=sandbox.slots,
            slot_dir=sandbox.slot_dir,
        )
    registry = ToolRegistry()
    for tool in (
        RunPythonTool(sandbox),
        RunCommandTool(sandbox, allowed=("python3", "no-such-program")),
        GitTool(sandbox),
        GitCommitTool(sandbox),
    ):
        registry.register(tool)
    return registry


@pytest.fixture
def registry(tmp_path) -> ToolRegistry:
    return registry_of(working_sandbox(tmp_path / "slots"))


@pytest.fixture
def workspace(tmp_path) -> Path:
    return tmp_path / "workspaces" / "run-1"


@pytest.fixture
def context(workspace) -> ToolContext:
    return ToolContext(run_id=1, workspace=workspace, timeout=10.0)


def call(registry, context, name, **arguments) -> ToolResult:
    result = registry.call(name, arguments, context)
    json.dumps(result.content)
    return result


def test_run_python_runs_a_snippet_in_the_workspace_and_reports_its_output(registry, context):
    result = call(
        registry,
        context,
        "run_python",
        code="import os, sys; print(os.getcwd()); print('oops', file=sys.stderr); sys.exit(3)",
    )

    assert result.ok
    assert result.content["stdout"] == "/workspace\n"
    assert result.content["stderr"] == "oops\n"
    assert result.content["exit_code"] == 3
    assert result.content["cut"] is False and result.content["killed"] == ""
    assert result.content["duration_ms"] >= 0


def test_run_python_runs_a_file_of_the_workspace_with_its_arguments(registry, context, workspace):
    workspace.mkdir(parents=True)
    (workspace / "hello.py").write_text("import sys; print('hello', *sys.argv[1:])\n")

    result = call(registry, context, "run_python", path="hello.py", args=["a", "b"])

    assert result.ok and result.content["stdout"] == "hello a b\n"


def test_what_the_sandbox_writes_lands_in_the_workspace(registry, context, workspace):
    result = call(registry, context, "run_python", code="open('out.txt', 'w').write('made')")

    assert result.ok and result.content["exit_code"] == 0
    assert (workspace / "out.txt").read_text() == "made"


def test_run_command_runs_an_allowed_program_without_a_shell(registry, context):
    result = call(registry, context, "run_command", argv=["python3", "-c", "print(1 + 1)"])

    assert result.ok and result.content["stdout"] == "2\n"


def test_run_command_refuses_a_program_off_the_allow_list(registry, context):
    result = call(registry, context, "run_command", argv=["sh", "-c", "echo hi"])

    assert not result.ok
    assert "'sh' is not an allowed program" in result.error


def test_run_command_says_when_an_allowed_program_is_not_installed(registry, context):
    result = call(registry, context, "run_command", argv=["no-such-program"])

    assert not result.ok and "not installed" in result.error


def test_git_commits_with_a_fixed_author_and_shows_the_log(registry, context, workspace):
    assert call(registry, context, "git", subcommand="init").ok
    (workspace / "a.txt").write_text("one\n")
    assert call(registry, context, "git", subcommand="add", args=["a.txt"]).ok

    committed = call(registry, context, "git_commit", message="First")
    log = call(registry, context, "git", subcommand="log", args=["--format=%an <%ae> %s"])

    assert committed.ok and committed.content["exit_code"] == 0, committed.content
    assert log.content["stdout"] == "AgentDesk agent <agent@agentdesk.invalid> First\n"


def test_run_python_and_run_command_ask_a_person_and_git_reads_do_not(registry, tmp_path):
    def level(name, **arguments):
        return classify_call(registry.get(name).spec, arguments).level

    assert level("run_python", code="print(1)") == "manual"
    assert level("run_command", argv=["python3", "-V"]) == "manual"
    assert level("git", subcommand="status") == "auto"
    assert level("git", subcommand="diff") == "auto"
    assert level("git_commit", message="x") == "moderate"


@pytest.mark.django_db
def test_staff_may_lower_a_code_tool_the_sandbox_confines_but_not_unconfined_code(registry):
    Tool.objects.update_or_create(
        name="run_python", defaults={"source": ToolSource.BUILTIN, "approval_level": "auto"}
    )
    specs = {spec.name: spec for spec in configured_specs(registry)}

    assert classify_call(specs["run_python"], {"code": "print(1)"}).level == "auto"
    # A tool that is not sandboxed still needs a person for code, whatever its own level.
    unconfined = replace(specs["run_python"], sandboxed=False)
    assert classify_call(unconfined, {"code": "print(1)"}).level == "manual"


def test_a_call_past_the_time_limit_fails_naming_it(tmp_path, context):
    registry = registry_of(working_sandbox(tmp_path / "slots", wall_seconds=1.0))

    result = call(registry, context, "run_python", code="import time; time.sleep(30)")

    assert not result.ok and "time limit" in result.error
    assert result.content["killed"] == "time limit"
    assert result.content["duration_ms"] < 3000


def test_where_bubblewrap_is_missing_the_tools_are_listed_as_unavailable_and_run_nothing(
    tmp_path, context, workspace
):
    sandbox = Sandbox(
        bwrap=str(tmp_path / "no-bwrap"), limits=Limits(), slots=1, slot_dir=tmp_path / "slots"
    )
    registry = registry_of(sandbox)

    for name in CODE_TOOLS:
        assert registry.get(name).spec.description.startswith("Unavailable: bubblewrap")
    result = call(registry, context, "run_python", code="open('ran', 'w')")

    assert not result.ok
    assert result.error.startswith("The sandbox is unavailable, so nothing was run")
    assert not (workspace / "ran").exists()


def test_where_bubblewrap_fails_to_start_the_tools_are_unavailable(tmp_path, context):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    sandbox = Sandbox(bwrap=str(fake), limits=Limits(), slots=1, slot_dir=tmp_path / "slots")

    reason = sandbox.unavailable_reason()

    # As root the sandbox's user starts it, and this one is not theirs to run: either way, why.
    assert reason.startswith("bubblewrap could not start")
    assert not call(registry_of(sandbox), context, "git", subcommand="status").ok


def test_past_the_machines_cap_of_sandboxes_a_call_waits_then_fails_saying_so(tmp_path, context):
    sandbox = working_sandbox(tmp_path / "slots", wall_seconds=3.0)
    sandbox.slots = 1
    holder = threading.Thread(
        target=sandbox.run,
        args=(["/usr/bin/python3", "-c", "import time; time.sleep(1)  # holding the slot"],),
        kwargs={"workspace": tmp_path / "other"},
    )
    holder.start()
    deadline = time.monotonic() + 3
    while not sandbox_processes("# holding the slot") and time.monotonic() < deadline:
        time.sleep(0.01)

    result = call(
        registry_of(sandbox, wall_seconds=0.3), context, "run_python", code="print('ran')"
    )
    holder.join()

    assert not result.ok
    assert (
        result.error
        == "Nothing was run: all 1 sandboxes of this machine stayed busy for 0.3 s; try again later"
    )
