"""A conversation's WebSockets (the chat page's and the mobile API's) over the real Redis
channel layer: the transcript after a seq then live, with no gap and no duplicate; the waiting
messages; the running answer with its events and tokens; refusals as for the run sockets.
Answers run in the test's process with the in-process scripted LLM (no Celery)."""

import pytest
from asgiref.sync import async_to_sync, sync_to_async

from agents_app.conversations.services import conversation_create, conversation_stop, message_post
from agents_app.core.events import publish, run_group
from agents_app.models import Run
from agents_app.worker.execution import execute_run
from tests.support.conversations import (
    api_socket,
    idle,
    of_type,
    page_socket,
    receive_until,
    rows_sent,
    rows_stored,
)
from tests.support.script import tool_call
from tests.support.scripted_provider import ScriptedProvider
from tests.support.sockets import (
    ORIGIN,
    add_events,
    nothing_more,
    receive_json,
    refusal,
    session_headers,
)
from tests.support.tools import EchoTool, make_registry

pytestmark = pytest.mark.django_db(transaction=True)

ANSWER = [
    {
        "match": "AGENTDESK:CHAT",
        "replies": [
            {**tool_call("echo", text="hi"), "reasoning": "I should echo."},
            {"content": "It said hi.", "reasoning": "Done."},
        ],
    }
]


def answer_now(run: Run, rules=ANSWER) -> None:
    execute_run(run.pk, provider=ScriptedProvider(rules), registry=make_registry(EchoTool()))


@pytest.fixture
def chat(owner, llm):
    return conversation_create(owner=owner, interface="api")


@pytest.mark.dialect
def test_it_sends_the_state_then_the_answer_live_and_ends_with_the_whole_transcript(
    owner, chat, api_key_for
):
    _, run = message_post(conversation=chat, actor=owner, interface="api", text="Echo hi")
    key = api_key_for(owner)

    async def scenario():
        socket = api_socket(chat.pk, key)
        assert (await socket.connect())[0]
        opening = await receive_until(socket, lambda m: m["type"] == "run_event")
        await sync_to_async(answer_now)(run)
        live = await receive_until(socket, idle)
        assert await nothing_more(socket)
        await socket.disconnect()
        return opening, live

    opening, live = async_to_sync(scenario)()
    assert opening == [
        {"type": "entry", "entry": opening[0]["entry"]},
        {"type": "waiting", "entries": []},
        {"type": "answer", "run_id": run.pk, "status": "queued"},
        {"type": "run_event", "run_id": run.pk, "event": opening[3]["event"]},
    ]
    assert (opening[0]["entry"]["seq"], opening[0]["entry"]["text"]) == (1, "Echo hi")
    assert opening[3]["event"]["seq"] == 1 and opening[3]["event"]["type"] == "run_queued"
    messages = opening + live
    # Every row once, in seq order, and exactly what the table holds.
    assert rows_sent(of_type(messages, "entry")) == rows_stored(chat)
    assert [k for _, k, _ in rows_stored(chat)] == [
        "user",
        "reasoning",
        "tool_call",
        "tool_result",
        "reasoning",
        "assistant",
    ]
    # The answer's events from its first, once each, and its streamed text.
    seqs = [m["event"]["seq"] for m in of_type(messages, "run_event")]
    assert seqs == list(range(1, Run.objects.get(pk=run.pk).event_seq + 1))
    assert "tool_call" in [m["event"]["type"] for m in of_type(messages, "run_event")]
    tokens = of_type(live, "token")
    assert "".join(t["token"] for t in tokens if not t["reasoning"]) == "It said hi."
    assert {t["run_id"] for t in tokens} == {run.pk}
    answers = [(m["run_id"], m["status"]) for m in of_type(live, "answer")]
    assert answers[-2:] == [(run.pk, "succeeded"), (None, "idle")]
    assert len(answers) == len(set(answers))  # a change is told once


@pytest.mark.dialect
def test_a_reconnect_after_a_seq_gets_exactly_the_rows_it_missed(owner, chat, api_key_for):
    _, run = message_post(conversation=chat, actor=owner, interface="api", text="Echo hi")
    answer_now(run)
    key = api_key_for(owner)

    async def scenario():
        socket = api_socket(chat.pk, key, after=3)
        assert (await socket.connect())[0]
        messages = await receive_until(socket, lambda m: m["type"] == "answer")
        assert await nothing_more(socket)
        await socket.disconnect()
        return messages

    messages = async_to_sync(scenario)()
    assert rows_sent(of_type(messages, "entry")) == rows_stored(chat)[3:]
    assert [m["seq"] for m in map(lambda m: m["entry"], of_type(messages, "entry"))] == [4, 5, 6]
    assert messages[-1] == {"type": "answer", "run_id": None, "status": "idle"}
    assert not of_type(messages, "run_event")  # no answer runs: no run to follow


@pytest.mark.dialect
def test_a_socket_joining_an_answer_in_flight_gets_its_events_from_the_first(
    owner, chat, api_key_for
):
    _, run = message_post(conversation=chat, actor=owner, interface="api", text="Go")
    add_events(run.pk, "run_status", "step_started")
    key = api_key_for(owner)

    async def scenario():
        socket = api_socket(chat.pk, key, after=1)
        assert (await socket.connect())[0]
        messages = [await receive_json(socket) for _ in range(5)]
        await sync_to_async(publish)(
            run_group(run.pk), [{"type": "run.token", "token": "Hel", "reasoning": False}]
        )
        token = await receive_json(socket)
        await socket.disconnect()
        return messages, token

    messages, token = async_to_sync(scenario)()
    assert [m["type"] for m in messages] == [
        "waiting",
        "answer",
        "run_event",
        "run_event",
        "run_event",
    ]
    assert [m["event"]["seq"] for m in messages[2:]] == [1, 2, 3]
    assert token == {"type": "token", "run_id": run.pk, "token": "Hel", "reasoning": False}


def test_messages_waiting_are_sent_as_they_change(owner, chat, api_key_for):
    _, run = message_post(conversation=chat, actor=owner, interface="api", text="one")
    key = api_key_for(owner)

    async def scenario():
        socket = api_socket(chat.pk, key)
        assert (await socket.connect())[0]
        await receive_until(socket, lambda m: m["type"] == "run_event")
        post = sync_to_async(message_post)
        await post(conversation=chat, actor=owner, interface="api", text="two")
        queued = await receive_json(socket)
        await sync_to_async(conversation_stop)(conversation=chat, actor=owner, interface="api")
        after_stop = await receive_until(socket, idle)
        await socket.disconnect()
        return queued, after_stop

    queued, after_stop = async_to_sync(scenario)()
    assert queued["type"] == "waiting"
    assert [(e["text"], e["seq"], e["mode"]) for e in queued["entries"]] == [
        ("two", None, "enqueue")
    ]
    # Stopped: "two" joins the transcript unanswered and waits no more.
    assert {"type": "waiting", "entries": []} in after_stop
    held = [m["entry"] for m in of_type(after_stop, "entry")]
    assert [(e["seq"], e["text"]) for e in held] == [(2, "two")]
    assert held[0]["data"]["held"]
    answers = [(m["run_id"], m["status"]) for m in of_type(after_stop, "answer")]
    assert answers == [(run.pk, "cancelled"), (None, "idle")]


def test_the_page_socket_streams_the_same_messages_with_a_session(owner, chat):
    message_post(conversation=chat, actor=owner, interface="web", text="hi")
    headers = session_headers(owner)

    async def scenario():
        socket = page_socket(chat.pk, headers)
        assert (await socket.connect())[0]
        messages = [await receive_json(socket) for _ in range(3)]
        await socket.disconnect()
        return messages

    messages = async_to_sync(scenario)()
    assert [m["type"] for m in messages] == ["entry", "waiting", "answer"]


def test_the_page_socket_refuses_an_outsider_a_stranger_and_another_site(owner, outsider, chat):
    cases = {
        "outsider": session_headers(outsider),
        "anonymous": [(b"origin", ORIGIN)],
        "other site": session_headers(owner, origin=b"https://evil.example"),
        "missing": session_headers(owner),
    }

    async def connect(name, headers):
        conversation_id = chat.pk + 1000 if name == "missing" else chat.pk
        connected, _ = await page_socket(conversation_id, headers).connect()
        return connected

    assert {name: async_to_sync(connect)(name, h) for name, h in cases.items()} == dict.fromkeys(
        cases, False
    )


def test_the_api_socket_closes_4403_for_another_users_conversation_and_4401_without_a_key(
    owner, outsider, chat, api_key_for
):
    outsider_key = api_key_for(outsider)

    async def code(auth, conversation_id=chat.pk):
        return await refusal(api_socket(conversation_id, auth))

    assert async_to_sync(code)(outsider_key) == 4403
    assert async_to_sync(code)(outsider_key, chat.pk + 1000) == 4403
    assert async_to_sync(code)(None) == 4401
    assert async_to_sync(code)(b"Bearer adk_nope") == 4401


def test_the_api_socket_answers_a_ping_and_explains_anything_else(owner, chat, api_key_for):
    key = api_key_for(owner)

    async def scenario():
        socket = api_socket(chat.pk, key)
        await socket.connect()
        await receive_until(socket, lambda m: m["type"] == "answer")
        await socket.send_to(text_data='{"type": "ping", "id": "p1"}')
        pong = await receive_json(socket)
        await socket.send_to(text_data='{"type": "send", "text": "hi"}')
        error = await receive_json(socket)
        await socket.disconnect()
        return pong, error

    pong, error = async_to_sync(scenario)()
    assert pong == {"type": "pong", "id": "p1"}
    assert error["type"] == "error" and error["error"]["code"] == "VALIDATION_ERROR"
