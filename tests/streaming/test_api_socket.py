"""The mobile JSON WebSocket over the real Redis channel layer."""

import pytest
from asgiref.sync import async_to_sync

from agents_app.models import RunEvent
from tests.support.runs import make_run
from tests.support.sockets import (
    add_events,
    add_events_async,
    api_socket,
    nothing_more,
    receive_events,
    receive_json,
    refusal,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.dialect
def test_it_replays_the_log_then_sends_live_events_in_order(owner, api_key_for):
    run = make_run(owner)
    owner_key = api_key_for(owner)
    add_events(run.pk, "plan_created")

    async def scenario():
        socket = api_socket(run.pk, owner_key)
        connected, _ = await socket.connect()
        assert connected
        backlog = await receive_events(socket, 2)
        await add_events_async(run.pk, "step_started", "step_completed", "progress_update")
        live = await receive_events(socket, 3)
        assert await nothing_more(socket)
        await socket.disconnect()
        return backlog + live

    messages = async_to_sync(scenario)()
    assert [m["seq"] for m in messages] == [1, 2, 3, 4, 5]
    assert [m["type"] for m in messages] == [
        "run_queued",
        "plan_created",
        "step_started",
        "step_completed",
        "progress_update",
    ]
    assert messages[0]["id"] == f"run-{run.pk}-1" and messages[2]["payload"] == {
        "n": "step_started"
    }


@pytest.mark.dialect
def test_a_reconnect_with_a_seq_gets_exactly_what_it_missed(owner, api_key_for):
    run = make_run(owner)
    owner_key = api_key_for(owner)
    key = owner_key

    async def scenario():
        first = api_socket(run.pk, key)
        await first.connect()
        seen = await receive_events(first, 1)
        await add_events_async(run.pk, "a", "b")
        seen += await receive_events(first, 2)
        await first.disconnect()
        await add_events_async(run.pk, "c", "d")  # while the client is away
        second = api_socket(run.pk, key, after=seen[-1]["seq"])
        await second.connect()
        seen += await receive_events(second, 2)
        await add_events_async(run.pk, "e")
        seen += await receive_events(second, 1)
        assert await nothing_more(second)
        await second.disconnect()
        return seen

    seqs = [m["seq"] for m in async_to_sync(scenario)()]
    assert seqs == list(range(1, 7))


@pytest.mark.dialect
def test_a_missed_publish_is_filled_from_the_table(owner, api_key_for):
    run = make_run(owner)
    owner_key = api_key_for(owner)

    async def scenario():
        socket = api_socket(run.pk, owner_key)
        await socket.connect()
        seen = await receive_events(socket, 1)
        await add_events_async_silently(run.pk, 2)  # committed, never published
        await add_events_async(run.pk, "after-the-gap")
        seen += await receive_events(socket, 3)
        assert await nothing_more(socket)
        await socket.disconnect()
        return seen

    from asgiref.sync import sync_to_async

    from agents_app.models import Run

    @sync_to_async
    def add_events_async_silently(run_id, count):
        for _ in range(count):
            seq = Run.objects.get(pk=run_id).event_seq + 1
            RunEvent.objects.create(run_id=run_id, seq=seq, type="unpublished")
            Run.objects.filter(pk=run_id).update(event_seq=seq)

    seen = async_to_sync(scenario)()
    assert [m["seq"] for m in seen] == [1, 2, 3, 4]
    assert [m["type"] for m in seen][1:] == ["unpublished", "unpublished", "after-the-gap"]


def test_another_users_run_is_accepted_then_closed_with_4403(owner, outsider, api_key_for):
    run = make_run(owner)
    outsider_key = api_key_for(outsider)

    async def scenario():
        return await refusal(api_socket(run.pk, outsider_key))

    assert async_to_sync(scenario)() == 4403


def test_a_missing_or_bad_key_is_accepted_then_closed_with_4401(owner):
    run = make_run(owner)

    async def scenario(auth):
        return await refusal(api_socket(run.pk, auth))

    assert async_to_sync(scenario)(None) == 4401
    assert async_to_sync(scenario)(b"Bearer adk_nope") == 4401


def test_it_answers_a_ping_and_explains_anything_else(owner, api_key_for):
    run = make_run(owner)
    owner_key = api_key_for(owner)

    async def scenario():
        socket = api_socket(run.pk, owner_key)
        await socket.connect()
        await receive_json(socket)
        await socket.send_to(text_data='{"type": "ping", "id": "p1"}')
        pong = await receive_json(socket)
        await socket.send_to(text_data="not json")
        error = await receive_json(socket)
        await socket.disconnect()
        return pong, error

    pong, error = async_to_sync(scenario)()
    assert pong == {"id": "p1", "type": "pong", "payload": {}}
    assert error["type"] == "error" and error["payload"]["code"] == "VALIDATION_ERROR"


def test_tokens_stream_as_stream_token_messages(owner, api_key_for):
    from agents_app.core.events import publish, run_group

    run = make_run(owner)
    owner_key = api_key_for(owner)

    async def scenario():
        socket = api_socket(run.pk, owner_key)
        await socket.connect()
        await receive_json(socket)
        token = {"type": "run.token", "token": "Hel", "phase": "execution", "step_index": 0}
        await sync_publish(run_group(run.pk), [{**token, "reasoning": False}])
        message = await receive_json(socket)
        await socket.disconnect()
        return message

    from asgiref.sync import sync_to_async

    sync_publish = sync_to_async(publish)
    message = async_to_sync(scenario)()
    assert message["type"] == "stream_token"
    assert message["payload"] == {
        "token": "Hel",
        "phase": "execution",
        "step_index": 0,
        "reasoning": False,
    }
