"""The header's MCP server panel: statuses, why a server is broken, live over a WebSocket."""

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator

from config.asgi import application
from tests.support.sockets import session_headers
from tools_app.mcp.store import DatabaseStore
from tools_app.models import MCPServer


@pytest.fixture
def servers(db):
    good = MCPServer.objects.create(name="good", transport="stdio", command="node")
    good.mark("active", tool_count=3)
    bad = MCPServer.objects.create(name="bad", transport="stdio", command="node")
    bad.mark("broken", error="spawn node ENOENT", stderr_tail="line one\nfatal: no such file")
    return good, bad


@pytest.mark.django_db
def test_every_page_shows_staff_the_servers_and_why_one_is_broken(client, staff, servers):
    client.force_login(staff)
    html = client.get("/").content.decode()
    assert 'id="servers-summary"' in html and "1 active · 1 broken" in html
    assert "spawn node ENOENT" in html and "fatal: no such file" in html
    assert 'ws-connect="/ws/header/"' in html


@pytest.mark.django_db
def test_every_page_shows_others_that_a_server_is_broken_but_not_its_output(client, owner, servers):
    client.force_login(owner)
    html = client.get("/").content.decode()
    assert "1 active · 1 broken" in html and "staff can see why" in html
    assert "spawn node ENOENT" not in html and "fatal: no such file" not in html


def header_messages(user, change, timeout=15.0):
    """What /ws/header/ sends `user`: the panel on connect, the approvals count, then the panel
    again after `change()` (run in a thread) has changed a server's status. Each wait ends as
    soon as the message is there; the timeout is for a machine under load."""
    headers = session_headers(user)

    async def scenario():
        socket = WebsocketCommunicator(application, "/ws/header/", headers=headers)
        assert (await socket.connect(timeout))[0]
        first = await socket.receive_from(timeout)
        count = await socket.receive_from(timeout)  # the header's other live part: approvals
        await sync_to_async(change)()
        second = await socket.receive_from(timeout)
        await socket.disconnect()
        return first, count, second

    return async_to_sync(scenario)()


@pytest.mark.django_db(transaction=True)
def test_a_status_change_reaches_open_pages(staff, servers):
    good, _ = servers

    def break_it():
        DatabaseStore().record_broken(good.pk, "the server closed the connection", "bye")

    first, count, second = header_messages(staff, break_it)
    assert "1 active · 1 broken" in first and 'hx-swap-oob="true"' in first
    assert 'id="nav-approvals-count"' in count
    assert "0 active · 2 broken" in second and "the server closed the connection" in second


@pytest.mark.django_db(transaction=True)
def test_a_status_change_reaches_others_without_the_servers_output(owner, servers):
    good, _ = servers

    def break_it():
        DatabaseStore().record_broken(good.pk, "the server closed the connection", "bye")

    first, _, second = header_messages(owner, break_it)
    assert "1 active · 1 broken" in first and "fatal: no such file" not in first
    assert "0 active · 2 broken" in second and "staff can see why" in second
    assert "the server closed the connection" not in second and "spawn node" not in second


@pytest.mark.django_db(transaction=True)
def test_the_panel_socket_needs_a_login():
    async def scenario():
        socket = WebsocketCommunicator(
            application, "/ws/header/", headers=[(b"origin", b"http://127.0.0.1")]
        )
        return await socket.connect()

    assert async_to_sync(scenario)()[0] is False
