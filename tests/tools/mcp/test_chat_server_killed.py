"""Seed 002's "MCP server connection failure" in a chat: a stdio MCP server killed during a
call fails that call with a clear result the model is shown, the answer goes on, and the
next message's call reaches the reconnected server. Real worker, real MCP server."""

import json

import pytest

from agents_app.conversations.selectors import transcript
from agents_app.conversations.services import conversation_create, message_post
from tests.support.mcp_servers import KillableEverything
from tests.support.runs import allow_every_call
from tests.support.waiting import wait_for, wait_for_run

pytestmark = pytest.mark.integration


@pytest.mark.slow(
    reason="a worker and an MCP server start; the server is killed mid-call and started again"
)
def test_a_server_killed_mid_call_is_told_in_the_chat_and_the_next_message_works(
    llm, start_worker, owner, tmp_path
):
    allow_every_call(owner)
    everything = KillableEverything(tmp_path)
    long_call = {
        "name": "everything__trigger-long-running-operation",
        "arguments": {"duration": 30, "steps": 3},
    }
    echo_call = {"name": "everything__echo", "arguments": {"message": "still here"}}
    llm.script(
        [
            {"match": "again", "replies": [{"tool_calls": [echo_call]}, {"content": "It echoed."}]},
            {
                "match": "wait long",
                "replies": [{"tool_calls": [long_call]}, {"content": "The server failed."}],
            },
        ]
    )
    start_worker(MCP_RECONNECT_DELAY="20")
    chat = conversation_create(owner=owner, interface="web")
    _, first = message_post(conversation=chat, actor=owner, interface="web", text="wait long")
    wait_for(
        lambda: everything.has_read("trigger-long-running-operation"),
        60,
        message="the call's request to reach the server",
    )
    everything.kill()
    first = wait_for_run(first.pk, 60)
    assert first.status == "succeeded", (first.error_code, first.error_message)
    result = next(e for e in transcript(chat) if e.kind == "tool_result")
    assert result.data["ok"] is False
    assert "during a call to trigger-long" in json.loads(result.text)["error"]

    _, second = message_post(conversation=chat, actor=owner, interface="web", text="again")
    second = wait_for_run(second.pk, 60)
    assert second.final_response == "It echoed."
    assert "still here" in [e for e in transcript(chat) if e.kind == "tool_result"][-1].text
