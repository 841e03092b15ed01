"""The header's count of pending approvals, live on every page over its socket: it rises when
a run parks on a call, falls when the call is decided, and only ever counts the user's own."""

import re

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator

from agents_app.approvals.decisions import approval_decide
from config.asgi import application
from tests.support.approvals import parked
from tests.support.sockets import session_headers

pytestmark = pytest.mark.django_db(transaction=True)

COUNT = re.compile(r'<span id="nav-approvals-count"[^>]*hx-swap-oob="true">(\d*)</span>')


async def counts(socket: WebsocketCommunicator) -> list[str]:
    """The counts the socket sent until it went quiet ("" is none pending)."""
    seen = []
    while not await socket.receive_nothing(timeout=0.5):
        found = COUNT.search(await socket.receive_from(5))
        if found:
            seen.append(found.group(1))
    return seen


def test_the_count_follows_parking_and_deciding_and_stays_the_users_own(owner, outsider, registry):
    my_headers, their_headers = session_headers(owner), session_headers(outsider)

    async def scenario():
        mine = WebsocketCommunicator(application, "/ws/header/", headers=my_headers)
        theirs = WebsocketCommunicator(application, "/ws/header/", headers=their_headers)
        assert (await mine.connect())[0] and (await theirs.connect())[0]
        on_connect = await counts(mine), await counts(theirs)

        run, _, approval = await sync_to_async(parked)(owner, registry)
        after_parking = await counts(mine), await counts(theirs)

        await sync_to_async(approval_decide)(
            approval_id=approval.pk, decision="skip", actor=owner, interface="web"
        )
        after_deciding = await counts(mine), await counts(theirs)
        await mine.disconnect()
        await theirs.disconnect()
        return on_connect, after_parking, after_deciding

    on_connect, after_parking, after_deciding = async_to_sync(scenario)()
    assert on_connect == ([""], [""])
    mine, theirs = after_parking
    assert mine[-1] == "1" and theirs == []
    mine, theirs = after_deciding
    assert mine[-1] == "" and theirs == []


def test_a_page_renders_the_count_it_will_keep_live(client, owner, registry):
    parked(owner, registry)
    client.force_login(owner)
    html = client.get("/").content.decode()
    assert 'ws-connect="/ws/header/"' in html
    assert (
        '<span id="nav-approvals-count" class="nav-count" title="1 waiting for you">1</span>'
        in (html)
    )
