"""The run page and dashboard WebSockets: session auth, Origin check, HTML fragments."""

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator

from agents_app.models import AuditInterface
from agents_app.runs.services import run_cancel
from config.asgi import application
from tests.support.runs import make_run
from tests.support.sockets import ORIGIN, add_events_async, nothing_more, session_headers

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_run_page_socket_replays_then_streams_fragments(owner):
    run = make_run(owner)
    headers = session_headers(owner)

    async def scenario():
        socket = WebsocketCommunicator(application, f"/ws/runs/{run.pk}/?after=0", headers=headers)
        connected, _ = await socket.connect()
        assert connected
        backlog = await socket.receive_from(5)
        await add_events_async(run.pk, "cancel_requested")
        live = await socket.receive_from(5)
        assert await nothing_more(socket)
        await socket.disconnect()
        return backlog, live

    backlog, live = async_to_sync(scenario)()
    assert 'id="event-1"' in backlog and 'data-seq="1"' in backlog
    assert 'id="event-2"' in live and 'id="event-1"' not in live and 'data-seq="2"' in live


def test_the_run_page_socket_refuses_an_outsider_a_stranger_and_another_site(owner, outsider):
    run = make_run(owner)
    cases = {
        "outsider": session_headers(outsider),
        "anonymous": [(b"origin", ORIGIN)],
        "other site": session_headers(owner, origin=b"https://evil.example"),
    }

    async def connect(headers):
        socket = WebsocketCommunicator(application, f"/ws/runs/{run.pk}/", headers=headers)
        connected, code = await socket.connect()
        return connected

    assert {name: async_to_sync(connect)(h) for name, h in cases.items()} == {
        "outsider": False,
        "anonymous": False,
        "other site": False,
    }


def test_the_dashboard_socket_sends_a_fresh_row_when_a_run_changes(owner, outsider):
    run = make_run(owner)
    other = make_run(outsider)
    headers = session_headers(owner)

    async def scenario():
        socket = WebsocketCommunicator(application, "/ws/dashboard/", headers=headers)
        assert (await socket.connect())[0]
        await cancel(other)  # someone else's run: nothing for this user
        assert await nothing_more(socket)
        await cancel(run)
        row = await socket.receive_from(5)
        await socket.disconnect()
        return row

    from asgiref.sync import sync_to_async

    cancel = sync_to_async(lambda r: run_cancel(run=r, actor=r.owner, interface=AuditInterface.WEB))
    row = async_to_sync(scenario)()
    assert f'id="run-row-{run.pk}"' in row and 'data-status="cancelled"' in row
