"""Driving the WebSockets in-process: the API socket with a key, a page socket with a session
cookie and Origin, reading JSON messages, and committing events as the engine does."""

import asyncio
import json

from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator

from agents_app.core.events import publish, run_group
from agents_app.runs.writer import locked_run
from config.asgi import application
from tests.event_payloads import fabricated
from tests.support.clients import logged_in

ORIGIN = b"http://127.0.0.1:8101"


def api_socket(run_id: int, auth: bytes | None, after: int = 0) -> WebsocketCommunicator:
    headers = [(b"authorization", auth)] if auth else []
    return WebsocketCommunicator(
        application, f"/ws/api/runs/{run_id}/?after={after}", headers=headers
    )


def add_events(run_id: int, *types: str) -> None:
    """Commit events as the engine does (row + publish on commit), one transaction each.
    Their payloads are made up (tests/event_payloads.py does not check them)."""
    for type in types:
        with locked_run(run_id) as w:
            fabricated(w.event(type, {"n": type}))


async def receive_json(socket: WebsocketCommunicator, timeout: float = 5.0) -> dict:
    return json.loads(await socket.receive_from(timeout))


async def receive_events(socket: WebsocketCommunicator, count: int) -> list[dict]:
    return [await receive_json(socket) for _ in range(count)]


async def nothing_more(socket: WebsocketCommunicator, wait: float = 0.3) -> bool:
    return await socket.receive_nothing(timeout=wait)


add_events_async = sync_to_async(add_events)


async def refusal(socket: WebsocketCommunicator) -> int:
    """The close code of a socket the server accepts and then closes at once (as the API
    socket refuses a client, so that the code reaches it: a refused handshake carries none)."""
    connected, _ = await socket.connect()
    assert connected, "the handshake was refused: the client sees HTTP 403, not a close code"
    message = await socket.receive_output(timeout=5)
    assert message["type"] == "websocket.close", message
    return message["code"]


def session_headers(user, origin=ORIGIN):
    """A page socket's headers: the session cookie of `user` logged in, and an Origin."""
    client = logged_in(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    return [(b"cookie", cookie), (b"origin", origin)]


def published(run, stream) -> list[dict]:
    """What `stream()` publishes to the run's group on the channel layer, in order (the events
    and tokens a worker sends, a test's own marks)."""

    async def scenario():
        layer = get_channel_layer()
        channel = await layer.new_channel()
        await layer.group_add(run_group(run.pk), channel)
        await sync_to_async(stream)()
        await sync_to_async(publish)(run_group(run.pk), [{"type": "test.end"}])
        messages = []
        while (message := await asyncio.wait_for(layer.receive(channel), 10))["type"] != "test.end":
            messages.append(message)
        return messages

    return async_to_sync(scenario)()
