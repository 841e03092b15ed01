"""GET /api/v1/runs/{id}/events as server-sent events."""

import asyncio

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.test import AsyncClient

from agents_app.core.events import EventType
from agents_app.models import Run, RunEvent, RunStatus
from tests.support.runs import make_run
from tests.support.sockets import add_events, add_events_async
from tests.support.sse import parse, read_stream

# The tests write the events the stream reads themselves (add_events).
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.fabricated_events]


@pytest.mark.dialect
def test_a_finished_run_streams_its_log_and_ends(owner, api_key_for):
    run = make_run(owner)
    owner_key = api_key_for(owner)
    add_events(run.pk, "plan_created", "result")

    async def scenario():
        client = AsyncClient()
        response = await client.get(
            f"/api/v1/runs/{run.pk}/events",
            headers={"Accept": "text/event-stream", "Authorization": owner_key.decode()},
        )
        assert response["Content-Type"] == "text/event-stream"
        return await read_stream(response)

    events = parse(async_to_sync(scenario)())
    assert [(e["id"], e["event"]) for e in events] == [
        ("1", "run_queued"),
        ("2", "plan_created"),
        ("3", "result"),
    ]


@pytest.mark.dialect
def test_it_resumes_after_last_event_id_and_follows_live_events_to_the_result(owner, api_key_for):
    run = make_run(owner)
    owner_key = api_key_for(owner)
    add_events(run.pk, "plan_created", "step_started")

    async def scenario():
        client = AsyncClient()
        response = await client.get(
            f"/api/v1/runs/{run.pk}/events",
            headers={
                "Accept": "text/event-stream",
                "Authorization": owner_key.decode(),
                "Last-Event-ID": "2",
            },
        )
        return await read_stream(
            response, during=lambda: add_events_async(run.pk, "step_completed", "result")
        )

    events = parse(async_to_sync(scenario)())
    assert [e["id"] for e in events] == ["3", "4", "5"]
    assert events[-1]["event"] == "result"


def test_another_users_stream_is_404(owner, outsider, api_key_for):
    run = make_run(owner)
    outsider_key = api_key_for(outsider)

    async def scenario():
        return await AsyncClient().get(
            f"/api/v1/runs/{run.pk}/events",
            headers={
                "Accept": "text/event-stream",
                "Authorization": outsider_key.decode(),
            },
        )

    response = async_to_sync(scenario)()
    assert response.status_code == 404 and response.json()["error"]["code"] == "NOT_FOUND"


def test_an_idle_stream_sends_keepalives_and_ends_when_its_run_ends_unannounced(
    owner, api_key_for, settings
):
    settings.SSE_KEEPALIVE_SECONDS = 0.2
    run = make_run(owner)
    owner_key = api_key_for(owner)

    @sync_to_async
    def end_without_publishing():
        """The run ends, its result committed, but the publish is lost (best effort)."""
        seq = Run.objects.get(pk=run.pk).event_seq + 1
        RunEvent.objects.create(run_id=run.pk, seq=seq, type=EventType.RESULT)
        Run.objects.filter(pk=run.pk).update(event_seq=seq, status=RunStatus.CANCELLED)

    async def scenario():
        response = await AsyncClient().get(
            f"/api/v1/runs/{run.pk}/events",
            headers={"Accept": "text/event-stream", "Authorization": owner_key.decode()},
        )
        chunks = []

        async def consume():
            async for chunk in response.streaming_content:
                chunks.append(chunk.decode() if isinstance(chunk, bytes) else chunk)
                if chunk_count(chunks, ": keepalive") == 2:
                    await end_without_publishing()

        await asyncio.wait_for(consume(), 10)  # the stream ends by itself
        return "".join(chunks)

    stream = async_to_sync(scenario)()
    assert stream.count(": keepalive\n\n") == 2
    assert [e["event"] for e in parse(stream)] == ["run_queued", "result"]


def chunk_count(chunks: list[str], text: str) -> int:
    return sum(text in chunk for chunk in chunks)


def test_a_run_that_ends_between_the_backlog_and_the_check_still_sends_its_result(
    owner, api_key_for, monkeypatch
):
    """The run's result commits after the stream read its backlog and before it looks whether
    the run ended: the stream sends the result from the table, then ends (a benchmark of 50
    streams lost it on 3 under load)."""
    from agents_app.streaming import sse

    run = make_run(owner)
    owner_key = api_key_for(owner)
    add_events(run.pk, "plan_created")
    looked = sse._is_terminal

    async def ends_meanwhile(run_id: int) -> bool:
        await add_events_async(run_id, "result")
        await sync_to_async(Run.objects.filter(pk=run_id).update)(status=RunStatus.SUCCEEDED)
        return await looked(run_id)

    monkeypatch.setattr(sse, "_is_terminal", ends_meanwhile)

    async def scenario():
        response = await AsyncClient().get(
            f"/api/v1/runs/{run.pk}/events",
            headers={"Accept": "text/event-stream", "Authorization": owner_key.decode()},
        )
        return await asyncio.wait_for(read_stream(response), 10)

    events = parse(async_to_sync(scenario)())
    assert [e["event"] for e in events] == ["run_queued", "plan_created", "result"]
