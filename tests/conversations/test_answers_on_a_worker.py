"""Chat answers on real Celery workers with the scripted LLM server, read the ways a mobile
client reads them: over REST after the answer ended with no client connected, and over the
conversation's WebSocket joined in the middle of an answer; and two conversations answered at
the same time by two workers."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from asgiref.sync import async_to_sync

from agents_app.models import Conversation, Run
from tests.support.api import post_json
from tests.support.conversations import api_socket, of_type, rows_sent, rows_stored
from tests.support.script import tool_call
from tests.support.sockets import receive_json
from tests.support.waiting import wait_for, wait_for_run

pytestmark = pytest.mark.integration

URL = "/api/v1/conversations"
HELLO = {"path": "hello.txt", "content": "hello\n"}


def start_chat(client, text: str) -> tuple[int, int]:
    """A new conversation and its first message: (conversation id, the answer's run id)."""
    chat = post_json(client, URL, {}).json()
    sent = post_json(client, f"{URL}/{chat['id']}/messages", {"text": text})
    assert sent.status_code == 201, sent.content
    return chat["id"], sent.json()["run_id"]


def chat_requests(llm) -> list[dict]:
    return [b for b in llm.requests if "AGENTDESK:CHAT" in b["messages"][0]["content"]]


def test_an_answer_finished_with_no_client_connected_is_read_over_rest(
    llm, shared_worker, owner_api
):
    llm.script(
        [
            {
                "match": "AGENTDESK:CHAT",
                "replies": [tool_call("write_file", **HELLO), {"content": "Wrote hello.txt."}],
            }
        ]
    )
    chat_id, run_id = start_chat(owner_api, "Write hello to hello.txt")

    run = wait_for_run(run_id)
    body = owner_api.get(f"{URL}/{chat_id}/entries?after=0").json()

    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert [(e["seq"], e["kind"]) for e in body["entries"]] == [
        (1, "user"),
        (2, "tool_call"),
        (3, "tool_result"),
        (4, "assistant"),
    ]
    assert body["entries"][1]["data"]["arguments"] == HELLO
    assert body["entries"][-1]["text"] == "Wrote hello.txt."
    assert (body["last_seq"], body["running_answer"], body["waiting"]) == (4, None, [])
    # The model's second request carried the call and its result, as the transcript says.
    second = chat_requests(llm)[1]["messages"]
    assert [m["role"] for m in second[1:]] == ["user", "assistant", "tool"]
    after = owner_api.get(f"{URL}/{chat_id}/entries?after=2").json()
    assert [e["seq"] for e in after["entries"]] == [3, 4]


def test_a_socket_joining_mid_answer_gets_the_rest_live_and_the_whole_transcript(
    llm, shared_worker, owner, owner_api, api_key_for
):
    joined = threading.Event()

    def after_the_socket_joined(body):
        # The answer's second model request waits here until the client is connected.
        joined.wait(30)
        return {"content": "Wrote hello.txt for you.", "chunk_delay": 0.02}

    llm.script(
        [
            {
                "match": "AGENTDESK:CHAT",
                "replies": [tool_call("write_file", **HELLO), after_the_socket_joined],
            }
        ]
    )
    key = api_key_for(owner)
    chat_id, run_id = start_chat(owner_api, "Write hello to hello.txt")
    wait_for(lambda: len(chat_requests(llm)) == 2, message="the answer's second model request")

    async def scenario():
        socket = api_socket(chat_id, key)
        assert (await socket.connect())[0]
        messages = []
        while not (messages and messages[-1]["type"] == "run_event"):
            messages.append(await receive_json(socket, 10))
        joined.set()
        while not (messages[-1]["type"] == "answer" and messages[-1]["run_id"] is None):
            messages.append(await receive_json(socket, 30))
        await socket.disconnect()
        return messages

    messages = async_to_sync(scenario)()
    run = Run.objects.get(pk=run_id)
    assert run.status == "succeeded", (run.error_code, run.error_message)
    stored = rows_stored(Conversation.objects.get(pk=chat_id))
    assert rows_sent(of_type(messages, "entry")) == stored
    assert [kind for _, kind, _ in stored] == ["user", "tool_call", "tool_result", "assistant"]
    # The call made before the socket joined, from the run's first event, then the rest live.
    events = of_type(messages, "run_event")
    assert [m["event"]["seq"] for m in events] == list(range(1, run.event_seq + 1))
    assert "tool_call" in [m["event"]["type"] for m in events]
    assert messages[1]["type"] == "waiting" and messages[2]["type"] == "answer"
    assert messages[2]["run_id"] == run_id and messages[2]["status"] != "succeeded"
    tokens = "".join(m["token"] for m in of_type(messages, "token") if not m["reasoning"])
    assert tokens == "Wrote hello.txt for you."
    answers = [(m["run_id"], m["status"]) for m in of_type(messages, "answer")]
    assert answers[-2:] == [(run_id, "succeeded"), (None, "idle")]


def test_two_conversations_are_answered_at_the_same_time_by_two_workers(
    llm, start_worker, owner_api
):
    both_asked = threading.Barrier(2, timeout=30)

    def together(body):
        # Each answer waits for the other's request: only two answers in flight at once pass.
        try:
            both_asked.wait()
        except threading.BrokenBarrierError:
            return {"content": "alone"}
        question = body["messages"][-1]["content"]
        return {"content": f"together: {question}"}

    llm.script([{"match": "AGENTDESK:CHAT", "replies": [together, together]}])
    with ThreadPoolExecutor(2) as pool:  # both start at once: half the wait
        list(pool.map(start_worker, ["w1", "w2"]))

    first_chat, first_run = start_chat(owner_api, "first question")
    second_chat, second_run = start_chat(owner_api, "second question")
    runs = [wait_for_run(first_run), wait_for_run(second_run)]

    assert [r.status for r in runs] == ["succeeded", "succeeded"]
    answers = {
        chat: owner_api.get(f"{URL}/{chat}/entries").json()["entries"][-1]["text"]
        for chat in (first_chat, second_chat)
    }
    assert answers == {
        first_chat: "together: first question",
        second_chat: "together: second question",
    }
