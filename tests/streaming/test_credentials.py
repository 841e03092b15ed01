"""Sockets and streams follow their credentials (issue 29, finding 4): a key revoked closes the
sockets and event streams opened with it at once (4401), and logging out closes the session's
page sockets; other credentials' sockets stay open. Over the real Redis channel layer."""

import json

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import AsyncClient

from agents_app.core.api_keys import api_key_revoke
from agents_app.models import ApiKey, AuditInterface
from config.asgi import application
from tests.support.clients import logged_in
from tests.support.runs import make_run
from tests.support.sockets import (
    ORIGIN,
    add_events_async,
    api_socket,
    receive_events,
    receive_json,
)
from tests.support.sse import open_stream, parse, read_stream

pytestmark = pytest.mark.django_db(transaction=True)


@sync_to_async
def revoke(owner, authorization: bytes) -> None:
    """The owner revokes the key, as the Settings page does."""
    raw = authorization.decode().removeprefix("Bearer ")
    key = ApiKey.objects.get(key_hash=ApiKey.hash(raw))
    api_key_revoke(user=owner, key_id=key.pk, interface=AuditInterface.WEB)


async def closed_with(socket: WebsocketCommunicator) -> int:
    message = await socket.receive_output(timeout=5)
    assert message["type"] == "websocket.close", message
    return message["code"]


@pytest.mark.dialect
def test_revoking_a_key_closes_the_sockets_opened_with_it_and_no_others(owner, api_key_for):
    run = make_run(owner)
    revoked, kept = api_key_for(owner), api_key_for(owner)

    async def scenario():
        doomed, other = api_socket(run.pk, revoked), api_socket(run.pk, kept)
        for socket in (doomed, other):
            assert (await socket.connect())[0]
            await receive_events(socket, 1)  # the backlog: the socket is in its groups
        await revoke(owner, revoked)
        code = await closed_with(doomed)
        # The other key's socket still streams and answers.
        await add_events_async(run.pk, "step_started")
        live = await receive_json(other)
        await other.send_to(text_data=json.dumps({"type": "ping", "id": "p"}))
        pong = await receive_json(other)
        await other.disconnect()
        return code, live, pong

    code, live, pong = async_to_sync(scenario)()
    assert code == 4401
    assert live["type"] == "step_started" and pong["type"] == "pong"


@pytest.mark.dialect
def test_deleting_a_key_closes_the_sockets_opened_with_it(owner, api_key_for):
    run = make_run(owner)
    key = api_key_for(owner)

    @sync_to_async
    def delete():
        """Staff delete the key in the admin."""
        raw = key.decode().removeprefix("Bearer ")
        ApiKey.objects.get(key_hash=ApiKey.hash(raw)).delete()

    async def scenario():
        socket = api_socket(run.pk, key)
        assert (await socket.connect())[0]
        await receive_events(socket, 1)
        await delete()
        return await closed_with(socket)

    assert async_to_sync(scenario)() == 4401


@pytest.mark.dialect
def test_revoking_a_key_ends_the_event_stream_opened_with_it(owner, api_key_for):
    run = make_run(owner)
    key = api_key_for(owner)

    async def scenario():
        response = await open_stream(run.pk, key)
        assert response.status_code == 200
        # The stream ends by itself once the key is revoked (the run never ends).
        return await read_stream(response, during=lambda: revoke(owner, key), timeout=5)

    events = parse(async_to_sync(scenario)())
    assert [e["event"] for e in events] == ["run_queued", "closed"]
    assert json.loads(events[-1]["data"]) == {"code": 4401, "reason": "revoked"}


@pytest.mark.dialect
def test_logging_out_closes_the_sessions_page_sockets_and_no_others(owner):
    run = make_run(owner)
    leaving, staying = logged_in(owner), logged_in(owner)

    def headers(client):
        cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
        return [(b"cookie", cookie), (b"origin", ORIGIN)]

    async def scenario():
        run_page = WebsocketCommunicator(application, f"/ws/runs/{run.pk}/", headers(leaving))
        header = WebsocketCommunicator(application, "/ws/header/", headers(leaving))
        notices = WebsocketCommunicator(application, "/ws/notices/", headers(leaving))
        other = WebsocketCommunicator(application, f"/ws/runs/{run.pk}/", headers(staying))
        for socket in (run_page, header, notices, other):
            assert (await socket.connect())[0]
        await run_page.receive_from(5)  # the backlog
        await other.receive_from(5)
        await header.receive_from(5)  # the servers panel and the approvals count
        await header.receive_from(5)
        await sync_to_async(leaving.post)("/logout/")
        codes = [await closed_with(s) for s in (run_page, header, notices)]
        await add_events_async(run.pk, "cancel_requested")
        live = await other.receive_from(5)
        await other.disconnect()
        return codes, live

    codes, live = async_to_sync(scenario)()
    assert codes == [4401, 4401, 4401]
    assert 'id="event-2"' in live


@pytest.mark.dialect
def test_logging_out_ends_the_event_stream_the_session_opened(owner):
    run = make_run(owner)
    browser = logged_in(owner)

    async def scenario():
        client = AsyncClient()
        client.cookies = browser.cookies
        response = await client.get(
            f"/api/v1/runs/{run.pk}/events", headers={"Accept": "text/event-stream"}
        )
        assert response.status_code == 200
        logout = sync_to_async(browser.post)
        return await read_stream(response, during=lambda: logout("/logout/"), timeout=5)

    events = parse(async_to_sync(scenario)())
    assert [e["event"] for e in events] == ["run_queued", "closed"]
    assert json.loads(events[-1]["data"]) == {"code": 4401, "reason": "logged_out"}
