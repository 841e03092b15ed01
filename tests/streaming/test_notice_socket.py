"""The notices socket behind browser notifications: it tells a person, as JSON, when one of
their runs starts waiting for them, and tells nobody else."""

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator

from agents_app.approvals.decisions import approval_decide
from agents_app.core.events import publish, user_group
from config.asgi import application
from tests.support.approvals import parked
from tests.support.runs import make_run
from tests.support.sockets import ORIGIN, nothing_more, receive_json, session_headers
from tests.support.tools import FinishTool, ShellTool, make_registry

pytestmark = pytest.mark.django_db(transaction=True)

CONNECT_S = 10  # a first socket of the process sets up the channel layer: slow on a busy machine


@pytest.fixture
def registry(send):
    return make_registry(send, ShellTool(), FinishTool())


def notices_socket(headers) -> WebsocketCommunicator:
    return WebsocketCommunicator(application, "/ws/notices/", headers=headers)


def test_a_run_parking_on_a_call_sends_its_owner_one_notice_and_the_outsider_none(
    owner, outsider, registry
):
    mine_headers, their_headers = session_headers(owner), session_headers(outsider)

    async def scenario():
        mine, theirs = notices_socket(mine_headers), notices_socket(their_headers)
        assert (await mine.connect(CONNECT_S))[0] and (await theirs.connect(CONNECT_S))[0]
        run, _, approval = await sync_to_async(parked)(owner, registry)
        notice = await receive_json(mine)
        quiet = await nothing_more(mine), await nothing_more(theirs)
        await sync_to_async(approval_decide)(
            approval_id=approval.pk, decision="skip", actor=owner, interface="web"
        )
        after_deciding = await nothing_more(mine)
        await mine.disconnect()
        await theirs.disconnect()
        return run, approval, notice, quiet, after_deciding

    run, approval, notice, quiet, after_deciding = async_to_sync(scenario)()
    assert notice == {
        "type": "approval_waiting",
        "run_id": run.pk,
        "approval_id": approval.pk,
        "url": f"/runs/{run.pk}/",
        "title": f"Run {run.pk} waits for your approval",
        "body": "send: Do the thing",
        "tag": f"agentdesk-approval-{approval.pk}",
    }
    assert quiet == (True, True)
    assert after_deciding


def test_a_change_to_a_run_that_waits_for_nobody_sends_nothing(owner):
    run = make_run(owner)
    headers = session_headers(owner)

    async def scenario():
        socket = notices_socket(headers)
        assert (await socket.connect(CONNECT_S))[0]
        # A status change of a queued run, and a message type this socket does not handle.
        await sync_to_async(publish)(
            user_group(owner.pk),
            [
                {"type": "run.changed", "run_id": run.pk, "status_changed": True},
                {"type": "something.else", "run_id": run.pk},
            ],
        )
        quiet = await nothing_more(socket)
        await socket.send_to(text_data="not json")
        still_open = await nothing_more(socket)
        await socket.disconnect()
        return quiet, still_open

    assert async_to_sync(scenario)() == (True, True)


def test_the_notices_socket_refuses_strangers_and_other_sites(owner):
    cases = {
        "anonymous": [(b"origin", ORIGIN)],
        "other site": session_headers(owner, origin=b"https://evil.example"),
    }

    async def connect(headers):
        connected, _ = await notices_socket(headers).connect(CONNECT_S)
        return connected

    assert {name: async_to_sync(connect)(h) for name, h in cases.items()} == {
        "anonymous": False,
        "other site": False,
    }
