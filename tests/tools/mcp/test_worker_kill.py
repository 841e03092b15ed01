"""A stdio MCP server killed under a real worker: the call fails clearly, the server shows
broken with its stderr, and the same worker (not restarted) reconnects for the next call."""

import json

import pytest

from agents_app.models import Step, ToolCall
from agents_app.tasks import execute_run
from tests.support.mcp_servers import KillableEverything
from tests.support.runs import allow_every_call, make_run
from tests.support.script import plan_reply, step, verdict
from tests.support.waiting import wait_for, wait_for_run
from tools_app.models import MCPServer

pytestmark = pytest.mark.integration


@pytest.mark.slow(
    reason="a worker and an MCP server start; the server is killed and the worker reconnects"
)
def test_a_killed_server_breaks_one_call_and_the_same_worker_reconnects(
    llm, start_worker, owner, tmp_path
):
    allow_every_call(owner)  # MCP tools act outside the workspace: moderate, they would ask
    everything = KillableEverything(tmp_path)
    server = everything.server
    long_call = {
        "name": "everything__trigger-long-running-operation",
        "arguments": {"duration": 30, "steps": 3},
    }
    echo_call = {"name": "everything__echo", "arguments": {"message": "still here"}}
    llm.script(
        [
            {
                "match": ["AGENTDESK:PLAN", "first"],
                "replies": [
                    plan_reply(step("wait long", ["everything.trigger-long-running-operation"]))
                ],
            },
            {
                "match": ["AGENTDESK:PLAN", "second"],
                "replies": [plan_reply(step("echo", ["everything.echo"]))],
            },
            {"match": ["AGENTDESK:STEP 0", "wait long"], "replies": [{"tool_calls": [long_call]}]},
            {
                "match": ["AGENTDESK:STEP 0", "echo"],
                "replies": [{"tool_calls": [echo_call]}, {"content": "echoed"}],
            },
            {"match": ["AGENTDESK:VERIFY", "first"], "replies": [verdict(False)]},
            {
                "match": ["AGENTDESK:VERIFY", "second"],
                "replies": [verdict(True, "echoed", evidence=[1])],
            },
        ]
    )
    # Slow background reconnects, so the broken state can be seen; a call reconnects at once.
    worker = start_worker(MCP_RECONNECT_DELAY="20")
    first = make_run(owner, "first task")
    execute_run.delay(first.pk)
    wait_for(
        lambda: ToolCall.objects.filter(run=first, status="running").exists(),
        60,
        message="the long call",
    )
    # The row is written just before the request goes out; killing the server before the
    # request reaches it would let the call reconnect to a fresh server and run its whole
    # 30 s. The operation lasts 30 s: once the server has read the request, it is under way.
    wait_for(
        lambda: everything.has_read("trigger-long-running-operation"),
        30,
        message="the call's request to reach the server",
    )
    everything.kill()

    first = wait_for_run(first.pk, 60)
    call = ToolCall.objects.get(run=first)
    # Killed before or during the call's round trip: either way it fails and says so.
    assert call.status == "failed" and "during a call to trigger-long" in call.error, call.error
    assert Step.objects.get(run=first).error.startswith("TOOL_FAILED")
    wait_for(lambda: MCPServer.objects.get(pk=server.pk).status == "broken", 10, message="broken")
    broken = MCPServer.objects.get(pk=server.pk)
    assert "during a call to trigger-long" in broken.last_error
    assert broken.stderr_tail.strip(), "the server's stderr is shown"

    second = make_run(owner, "second task")
    execute_run.delay(second.pk)
    second = wait_for_run(second.pk, 60)
    assert second.status == "succeeded", (second.error_code, second.error_message)
    assert "still here" in json.dumps(ToolCall.objects.get(run=second).result)
    wait_for(
        lambda: MCPServer.objects.get(pk=server.pk).status == "active", 10, message="active again"
    )
    assert worker.process.poll() is None  # the same worker, never restarted
