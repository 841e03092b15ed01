"""What a sandboxed call does before its command starts is bounded (issue 34): the wait for a
free sandbox ends on the run's Cancel or Stop and at its timeout, and a workspace too large to
hand to the sandbox's user is refused, each with a clear error and nothing run."""

import threading
import time

import pytest

from tests.support.sandbox import sandbox_processes, working_sandbox
from tools_app.builtin import RunPythonTool
from tools_app.registry import ToolContext, ToolRegistry


@pytest.fixture
def context(tmp_path) -> ToolContext:
    return ToolContext(run_id=1, workspace=tmp_path / "workspaces" / "run-1", timeout=10.0)


def registry_of(sandbox) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(RunPythonTool(sandbox))
    return registry


@pytest.fixture
def only_slot_taken(tmp_path):
    """A sandbox of one slot, held by another call until the test ends."""
    sandbox = working_sandbox(tmp_path / "slots", wall_seconds=10.0)
    sandbox.slots = 1
    release = threading.Event()
    holder = threading.Thread(
        target=sandbox.run,
        args=(["/usr/bin/python3", "-c", "import time; time.sleep(30)  # holding the slot"],),
        kwargs={"workspace": tmp_path / "other", "cancelled": release.is_set},
    )
    holder.start()
    deadline = time.monotonic() + 5
    while not sandbox_processes("# holding the slot") and time.monotonic() < deadline:
        time.sleep(0.01)
    yield sandbox
    release.set()
    holder.join()


def test_a_call_waiting_for_a_free_sandbox_ends_within_a_second_of_cancel(only_slot_taken, context):
    sandbox = only_slot_taken
    sandbox.slot_wait = 30.0
    asked, asked_at = threading.Event(), []

    def cancel() -> None:
        asked_at.append(time.monotonic())
        asked.set()

    threading.Timer(0.3, cancel).start()

    result = registry_of(sandbox).call(
        "run_python",
        {"code": "open('ran', 'w')"},
        ToolContext(run_id=1, workspace=context.workspace, timeout=10.0, cancelled=asked.is_set),
    )
    answered = time.monotonic()

    assert not result.ok
    assert result.error == (
        "Nothing was run: the run was stopped while the call waited for a sandbox"
    )
    assert not (context.workspace / "ran").exists()
    assert asked_at and answered - asked_at[0] < 1.0


def test_the_wait_for_a_free_sandbox_ends_at_its_timeout_saying_all_are_busy(
    only_slot_taken, context
):
    sandbox = only_slot_taken
    sandbox.slot_wait = 0.5
    started = time.monotonic()

    result = registry_of(sandbox).call("run_python", {"code": "open('ran', 'w')"}, context)

    assert time.monotonic() - started < 1.5
    assert not result.ok
    assert result.error == (
        "Nothing was run: all 1 sandboxes of this machine stayed busy for 0.5 s; try again later"
    )
    assert not (context.workspace / "ran").exists()


def test_a_workspace_with_too_many_entries_is_refused_before_anything_runs(tmp_path, context):
    sandbox = working_sandbox(tmp_path / "slots", workspace_entries=50)
    context.workspace.mkdir(parents=True)
    for number in range(60):
        (context.workspace / f"file-{number}.txt").write_text("x")

    result = registry_of(sandbox).call("run_python", {"code": "open('ran', 'w')"}, context)

    assert not result.ok
    assert result.error.startswith(
        "Nothing was run: the workspace has more than 50 files and directories"
    ), result.error
    assert not (context.workspace / "ran").exists()
