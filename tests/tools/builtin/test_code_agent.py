"""Issue 34's scenario against the real sandbox: an agent (the scripted model) writes mathx.py
and its tests, runs them, reads the failure, fixes the code, sees them pass, and git shows the
change; and a Cancel ends a sandbox mid-call. The run goes through the engine in-process with
the builtin tools."""

import threading
import time

import pytest

from agents_app.conversations.services import conversation_create, conversation_stop, message_post
from agents_app.models import RunEvent
from agents_app.runs.lifecycle import workspace_for
from agents_app.runs.services import run_cancel
from agents_app.worker.execution import execute_run
from tests.support.runs import allow_every_call, make_run
from tests.support.sandbox import sandbox_processes, working_sandbox
from tests.support.script import tool_call
from tests.support.scripted_provider import ScriptedProvider
from tools_app.builtin import register_builtin_tools
from tools_app.registry import ToolRegistry

pytestmark = pytest.mark.django_db(transaction=True)

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TESTS = (
    "import unittest\n\nfrom mathx import add\n\n\n"
    "class AddTest(unittest.TestCase):\n"
    "    def test_it_adds(self):\n"
    "        self.assertEqual(add(2, 3), 5)\n"
)
RUN_TESTS = ["python3", "-m", "unittest", "-v", "test_mathx"]


def fix_after_reading_the_failure(request):
    """The model's turn after the first test run: it sees the failure, then writes the fix."""
    said = request.messages[-1]["content"]
    assert "AssertionError: -1 != 5" in said, said
    return tool_call("write_file", path="mathx.py", content=FIXED)


@pytest.fixture
def registry(settings, tmp_path) -> ToolRegistry:
    settings.WORKSPACE_ROOT = tmp_path / "workspaces"
    settings.AGENT_LOG_DIR = tmp_path / "logs"
    settings.AGENT_MAX_TOOL_ROUNDS = 20  # the whole scenario is one direct step
    registry = ToolRegistry()
    register_builtin_tools(
        registry,
        file_max_bytes=1 << 20,
        http_max_bytes=1 << 20,
        http_timeout=5,
        http_allow_private=False,
        sandbox=working_sandbox(tmp_path / "slots"),
        commands=("python3",),
    )
    return registry


def test_an_agent_writes_code_runs_its_tests_fixes_it_and_commits(owner, registry):
    allow_every_call(owner)  # the code tools ask a person; this test is about what they do
    replies = [
        tool_call("write_file", path="mathx.py", content=BUGGY),
        tool_call("write_file", path="test_mathx.py", content=TESTS),
        tool_call("git", subcommand="init"),
        tool_call("git", subcommand="add", args=["mathx.py", "test_mathx.py"]),
        tool_call("git_commit", message="Add mathx with its tests"),
        tool_call("run_command", argv=RUN_TESTS),
        fix_after_reading_the_failure,
        tool_call("run_command", argv=RUN_TESTS),
        tool_call("git", subcommand="diff"),
        tool_call("git_commit", message="Fix add", all=True),
        tool_call("git", subcommand="log", args=["--format=%s"]),
        tool_call("finish_task", result="add is fixed and its test passes"),
    ]
    run = make_run(owner, "Write add in mathx.py, test it, commit", fast_path=True)

    execute_run(
        run.pk,
        provider=ScriptedProvider([{"match": "AGENTDESK:DIRECT", "replies": replies}]),
        registry=registry,
    )

    run.refresh_from_db()
    assert run.status == "succeeded", (run.error_code, run.error_message)
    results = [e.payload for e in RunEvent.objects.filter(run=run, type="tool_result")]
    assert all(r["status"] == "succeeded" for r in results), results
    outputs = [r["result"] for r in results if isinstance(r["result"], dict)]
    first_run, second_run = (o for o in outputs if "test_it_adds" in o.get("stderr", ""))
    assert first_run["exit_code"] == 1 and "FAILED (failures=1)" in first_run["stderr"]
    assert second_run["exit_code"] == 0 and second_run["stderr"].rstrip().endswith("OK")
    diff = outputs[8]["stdout"]
    assert "-    return a - b" in diff and "+    return a + b" in diff
    assert outputs[10]["stdout"] == "Fix add\nAdd mathx with its tests\n"
    assert (workspace_for(run) / "mathx.py").read_text() == FIXED


def stopped_within_a_second(run, marker: str, phase: str, registry, stop) -> None:
    """The run's model calls run_python for 30 s (the code marked `marker`); once its sandbox
    is up, `stop()` must end the call and the run within a second, leaving no process."""
    sleeping = tool_call("run_python", code=f"import time; time.sleep(30)  {marker}")
    provider = ScriptedProvider([{"match": phase, "replies": [sleeping]}])
    worker = threading.Thread(
        target=execute_run, args=(run.pk,), kwargs={"provider": provider, "registry": registry}
    )
    worker.start()
    deadline = time.monotonic() + 10
    while not sandbox_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sandbox_processes(marker), "the sandbox never started"

    asked = time.monotonic()
    stop()
    worker.join(timeout=10)

    assert time.monotonic() - asked < 1.0
    assert sandbox_processes(marker) == []
    run.refresh_from_db()
    assert run.status == "cancelled", (run.error_code, run.error_message)


def test_cancelling_the_run_ends_its_running_sandbox_within_a_second(owner, registry):
    allow_every_call(owner)
    run = make_run(owner, "Sleep a while in python", fast_path=True)

    stopped_within_a_second(
        run,
        "# cancel me",
        "AGENTDESK:DIRECT",
        registry,
        lambda: run_cancel(run=run, actor=owner, interface="web"),
    )


def test_stopping_a_chat_answer_ends_its_running_sandbox_within_a_second(owner, registry, llm):
    allow_every_call(owner)
    chat = conversation_create(owner=owner, interface="web")
    _, run = message_post(conversation=chat, actor=owner, interface="web", text="Sleep a while")

    stopped_within_a_second(
        run,
        "# stop me",
        "AGENTDESK:CHAT",
        registry,
        lambda: conversation_stop(conversation=chat, actor=owner, interface="web"),
    )
