"""Many event streams (issue 29, finding 5): the streams of one process share one subscription
of a run's group (500 streams used to be 500 members, past what the channel layer holds for a
process), and one person has at most SSE_STREAMS_PER_USER open (429 beyond)."""

import asyncio

import pytest
import redis
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings

from agents_app.core.events import run_group
from tests.support.runs import make_run
from tests.support.sockets import add_events_async
from tests.support.sse import open_stream, parse, read_stream

pytestmark = pytest.mark.django_db(transaction=True)

STREAMS = 8


def members(group: str) -> int:
    """How many channels are in `group`, as the channel layer keeps it in Redis."""
    layer = get_channel_layer()
    return redis.Redis.from_url(settings.REDIS_URL).zcard(layer._group_key(group))


@pytest.fixture
def no_stream_slots():
    """Slots of streams a test never read (never started, so never given back) would count
    against the next test's person."""
    client = redis.Redis.from_url(settings.REDIS_URL)
    prefix = settings.CHANNEL_LAYERS["default"]["CONFIG"]["prefix"]
    yield
    keys = list(client.scan_iter(f"{prefix}:sse:user:*"))
    if keys:
        client.delete(*keys)


async def until(chunks, text: str) -> str:
    """Read a stream's chunks up to and including the one holding `text`."""
    read = ""
    async for chunk in chunks:
        read += chunk.decode() if isinstance(chunk, bytes) else chunk
        if text in read:
            return read
    return read


async def rest(chunks) -> str:
    return "".join([c.decode() if isinstance(c, bytes) else c async for c in chunks])


@pytest.mark.dialect
def test_the_streams_of_one_process_share_one_subscription_and_all_get_the_result(
    owner, api_key_for
):
    run = make_run(owner)
    key = api_key_for(owner)

    async def scenario():
        responses = [await open_stream(run.pk, key) for _ in range(STREAMS)]
        chunks = [aiter(r.streaming_content) for r in responses]
        # A stream that sent its backlog has subscribed: what commits now reaches it live.
        texts = [await until(c, "event: run_queued") for c in chunks]
        await add_events_async(run.pk, "plan_created")
        subscribed = members(run_group(run.pk))
        await add_events_async(run.pk, "result")
        ends = [asyncio.wait_for(rest(c), 5) for c in chunks]
        texts = [t + end for t, end in zip(texts, await asyncio.gather(*ends), strict=True)]
        return subscribed, texts, members(run_group(run.pk))

    subscribed, streams, left = async_to_sync(scenario)()
    assert subscribed == 1
    assert left == 0  # the last stream to end took the process out of the group
    assert all(
        [e["event"] for e in parse(stream)] == ["run_queued", "plan_created", "result"]
        for stream in streams
    )


@pytest.mark.dialect
def test_a_person_past_their_open_streams_gets_429_until_one_ends(
    owner, outsider, api_key_for, settings, no_stream_slots
):
    settings.SSE_STREAMS_PER_USER = 2
    run = make_run(owner)
    key = api_key_for(owner)
    others_run, others_key = make_run(outsider), api_key_for(outsider)

    async def scenario():
        first, second = await open_stream(run.pk, key), await open_stream(run.pk, key)
        refused = await open_stream(run.pk, key)
        # Another person's streams are theirs to count.
        theirs = await open_stream(others_run.pk, others_key)
        # One stream ends (the run's result), and its place is free again.
        await read_stream(first, during=lambda: add_events_async(run.pk, "result"), timeout=5)
        again = await open_stream(run.pk, key)
        await read_stream(again, timeout=5)  # the run ended: its log, and the end
        return first.status_code, second.status_code, refused, theirs.status_code, again

    first, second, refused, theirs, again = async_to_sync(scenario)()
    assert (first, second, theirs, again.status_code) == (200, 200, 200, 200)
    assert refused.status_code == 429
    body = refused.json()
    assert body["success"] is False
    assert body["error"]["code"] == "RATE_LIMITED"
    assert body["error"]["details"] == {"max_streams": 2}
    assert set(body["error"]) >= {"code", "message", "details", "trace_id"}
