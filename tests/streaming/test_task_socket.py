"""Tasks over the API socket (`ws/api/tasks/`, seed 000's protocol): a task_request runs on a
real Celery worker with the scripted LLM and streams stream_token, progress_update and result on
the same socket; a malformed message gets an error naming the field and the socket stays open;
past the person's queued limit the request is refused with REST's 429 RATE_LIMITED."""

import json

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator

from agents_app.models import Run
from config.asgi import application
from tests.runs.test_admission import waiting_rows
from tests.support.script import plan_reply, step, tool_call, verdict
from tests.support.sockets import receive_json, refusal

pytestmark = pytest.mark.django_db(transaction=True)

NOTE = {"path": "note.md", "content": "socket\n"}
WORDS = "Saved the note for you."


def task_socket(auth: bytes | None) -> WebsocketCommunicator:
    headers = [(b"authorization", auth)] if auth else []
    return WebsocketCommunicator(application, "/ws/api/tasks/", headers=headers)


async def send(socket: WebsocketCommunicator, message: dict | str) -> dict:
    """Send `message` (a dict as JSON, a str as is) and read the answer."""
    text = message if isinstance(message, str) else json.dumps(message)
    await socket.send_to(text_data=text)
    return await receive_json(socket)


async def still_open(socket: WebsocketCommunicator) -> bool:
    pong = await send(socket, {"id": "alive", "type": "ping"})
    return pong == {"id": "alive", "type": "pong", "payload": {}}


@pytest.mark.integration
def test_a_task_request_streams_tokens_and_progress_on_the_socket_then_its_result(
    llm, shared_worker, owner, api_key_for
):
    llm.script(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("Save", ["write_file"]))]},
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [
                    # Held until the socket has its acceptance, so the step's words stream
                    # to a socket in the run's group.
                    {**tool_call("write_file", **NOTE), "hold": "accepted"},
                    {"content": WORDS, "chunks": ["Saved ", "the note ", "for you."]},
                ],
            },
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "saved", evidence=[1])]},
        ]
    )
    key = api_key_for(owner)

    async def scenario():
        socket = task_socket(key)
        assert (await socket.connect())[0]
        request = {"id": "t1", "type": "task_request", "payload": {"task": "Save a note"}}
        messages = [await send(socket, request)]
        await sync_to_async(llm.release)("accepted")
        while messages[-1]["type"] != "result":
            messages.append(await receive_json(socket, 60))
        alive = await still_open(socket)
        await socket.disconnect()
        return messages, alive

    messages, alive = async_to_sync(scenario)()

    accepted, result = messages[0], messages[-1]
    assert accepted["type"] == "task_accepted", accepted
    run = Run.objects.get(pk=accepted["run_id"], owner=owner)
    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert accepted["payload"]["links"]["websocket"] == f"/ws/api/runs/{run.pk}/"
    assert {(m["id"], m["run_id"]) for m in messages} == {("t1", run.pk)}
    types = [m["type"] for m in messages]
    assert set(types) == {"task_accepted", "stream_token", "progress_update", "result"}
    assert types.count("result") == 1
    tokens = [m["payload"] for m in messages if m["type"] == "stream_token"]
    words = "".join(t["token"] for t in tokens if t["phase"] == "execution")
    assert WORDS in words
    assert {"token", "step_index", "phase", "reasoning"} == set(tokens[0])
    progress = [m["payload"] for m in messages if m["type"] == "progress_update"]
    assert {"current_step": 1, "total_steps": 1, "percent": 100, "status": "running"} in progress
    assert all(set(p) == {"current_step", "total_steps", "percent", "status"} for p in progress)
    statuses = [p["status"] for p in progress]
    assert [s for n, s in enumerate(statuses) if s not in statuses[:n]] == [
        "planning",
        "running",
        "verifying",
        "succeeded",
    ]
    assert result["payload"]["success"] is True and result["payload"]["run_id"] == run.pk
    assert result["payload"]["response"] == run.final_response
    assert alive


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ("not json", "message"),
        ({"id": "m", "payload": {"task": "x"}}, "type"),
        ({"id": "m", "type": "make_coffee"}, "type"),
        ({"id": "m", "type": "task_request", "payload": ["x"]}, "payload"),
        ({"id": "m", "type": "task_request", "payload": {}}, "payload.task"),
        ({"id": "m", "type": "task_request", "payload": {"task": "  "}}, "payload.task"),
        ({"id": "m", "type": "task_request", "payload": {"task": 7}}, "payload.task"),
        (
            {"id": "m", "type": "task_request", "payload": {"task": "x", "context": []}},
            "payload.context",
        ),
        (
            {"id": "m", "type": "task_request", "payload": {"task": "x", "wait": True}},
            "payload.wait",
        ),
        (
            {
                "id": "m",
                "type": "task_request",
                "payload": {"task": "x", "stream_responses": "yes"},
            },
            "payload.stream_responses",
        ),
        (
            {"id": "m", "type": "task_request", "payload": {"task": "x", "max_tokens": 0}},
            "payload.max_tokens",
        ),
    ],
)
def test_a_malformed_message_gets_an_error_naming_the_field_and_the_socket_stays_open(
    owner, api_key_for, message, field
):
    key = api_key_for(owner)

    async def scenario():
        socket = task_socket(key)
        assert (await socket.connect())[0]
        error = await send(socket, message)
        alive = await still_open(socket)
        await socket.disconnect()
        return error, alive

    error, alive = async_to_sync(scenario)()

    assert error["type"] == "error", error
    assert error["id"] == (message["id"] if isinstance(message, dict) else None)
    payload = error["payload"]
    assert (payload["code"], payload["http_status"]) == ("VALIDATION_ERROR", 400)
    assert payload["details"]["field"] == field, payload
    assert payload["message"] and payload["trace_id"] and payload["timestamp"]
    assert alive
    assert not Run.objects.exists()


def test_past_the_queued_limit_a_task_request_is_refused_with_rests_429(
    owner, api_key_for, settings
):
    waiting_rows(owner, settings.RUNS_QUEUED_PER_USER)
    before = Run.objects.count()
    key = api_key_for(owner)

    async def scenario():
        socket = task_socket(key)
        assert (await socket.connect())[0]
        error = await send(
            socket, {"id": "t9", "type": "task_request", "payload": {"task": "more"}}
        )
        alive = await still_open(socket)
        await socket.disconnect()
        return error, alive

    error, alive = async_to_sync(scenario)()

    assert (error["id"], error["type"]) == ("t9", "error")
    payload = error["payload"]
    assert (payload["code"], payload["http_status"]) == ("RATE_LIMITED", 429)
    assert payload["details"]["max_queued"] == settings.RUNS_QUEUED_PER_USER
    assert alive
    assert Run.objects.count() == before


def test_a_missing_or_bad_key_is_accepted_then_closed_with_4401():
    async def scenario(auth):
        return await refusal(task_socket(auth))

    assert async_to_sync(scenario)(None) == 4401
    assert async_to_sync(scenario)(b"Bearer adk_nope") == 4401
