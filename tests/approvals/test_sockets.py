"""Approvals over WebSockets: the owner sees the request and the decision live; another user's
socket to the run is refused, so they never see its approvals."""

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator

from agents_app.approvals.decisions import approval_decide
from config.asgi import application
from tests.support.approvals import parked
from tests.support.sockets import (
    api_socket,
    nothing_more,
    receive_json,
    refusal,
    session_headers,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def parked_run(owner, registry):
    run, _, approval = parked(owner, registry)
    return run, approval


def test_the_owner_sees_the_request_then_the_decision_live(owner, parked_run, api_key_for):
    run, approval = parked_run
    key = api_key_for(owner)

    async def scenario():
        socket = api_socket(run.pk, key)
        connected, _ = await socket.connect()
        assert connected
        backlog = []
        while await socket.receive_nothing(timeout=0.3) is False:
            backlog.append(await receive_json(socket))
        await sync_to_async(approval_decide)(
            approval_id=approval.pk, decision="deny", actor=owner, interface="api"
        )
        live = [await receive_json(socket) for _ in range(2)]
        assert await nothing_more(socket)
        await socket.disconnect()
        return backlog, live

    backlog, live = async_to_sync(scenario)()
    required = [m for m in backlog if m["type"] == "approval_required"]
    assert len(required) == 1
    assert required[0]["payload"]["id"] == approval.pk
    assert required[0]["payload"]["tool"] == "send"
    assert required[0]["payload"]["arguments"] == {"to": "ann", "text": "hi"}
    assert [m["type"] for m in live] == ["approval_decided", "run_status"]
    decided = live[0]["payload"]
    assert (decided["id"], decided["status"], decided["decided_by"]) == (
        approval.pk,
        "denied",
        "owner",
    )
    assert live[1]["payload"]["status"] == "running"


def test_an_outsider_cannot_open_the_runs_sockets(owner, outsider, parked_run, api_key_for):
    run, _ = parked_run
    outsider_key = api_key_for(outsider)
    outsider_session = session_headers(outsider)

    async def scenario():
        api_code = await refusal(api_socket(run.pk, outsider_key))
        page = WebsocketCommunicator(application, f"/ws/runs/{run.pk}/", headers=outsider_session)
        page_result = await page.connect()
        return api_code, page_result

    api_code, (page_connected, _) = async_to_sync(scenario)()
    assert api_code == 4403
    assert page_connected is False
