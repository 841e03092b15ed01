"""Server-sent events: the same replay-then-live feed as the WebSockets, for HTTP clients."""

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.http import StreamingHttpResponse

from agents_app.core.events import EventType, run_group
from agents_app.models import Run
from agents_app.streaming.feeds import RunFeed


def sse_event(event: dict[str, Any]) -> str:
    data = {"seq": event["seq"], "payload": event["payload"], "created_at": event["created_at"]}
    return f"id: {event['seq']}\nevent: {event['event_type']}\ndata: {json.dumps(data)}\n\n"


def sse_token(message: dict[str, Any]) -> str:
    data = {k: message.get(k) for k in ("token", "phase", "step_index", "reasoning")}
    return f"event: stream_token\ndata: {json.dumps(data)}\n\n"


@database_sync_to_async
def _is_terminal(run_id: int) -> bool:
    return Run.objects.get(pk=run_id).is_terminal


def _ends(events: list[dict[str, Any]]) -> bool:
    return any(e["event_type"] == EventType.RESULT for e in events)


async def run_event_stream(run_id: int, after: int) -> AsyncIterator[str]:
    """Events after `after`, then live ones, until the run's `result` event has been sent; a
    keepalive comment every SSE_KEEPALIVE_SECONDS while nothing happens."""
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(run_group(run_id), channel)
    feed = RunFeed(run_id, after)
    # One receive outlives the keepalive ticks: cancelling it every tick would cut the channel
    # layer's blocking Redis read (and its connection) each time.
    receiving: asyncio.Future | None = None
    try:
        yield "retry: 2000\n\n"
        events = await feed.backlog()
        for event in events:
            yield sse_event(event)
        if _ends(events) or await _is_terminal(run_id):
            return
        while True:
            if receiving is None:
                receiving = asyncio.ensure_future(layer.receive(channel))
            done, _ = await asyncio.wait({receiving}, timeout=settings.SSE_KEEPALIVE_SECONDS)
            if not done:
                # Quiet: if the run ended and its publish was lost, the table still has it.
                if await _is_terminal(run_id):
                    for event in await feed.backlog():
                        yield sse_event(event)
                    return
                yield ": keepalive\n\n"
                continue
            message, receiving = receiving.result(), None
            if message.get("type") == "run.token":
                yield sse_token(message)
                continue
            events = await feed.live(message)
            for event in events:
                yield sse_event(event)
            if _ends(events):
                return
    finally:
        if receiving is not None:
            receiving.cancel()
        await layer.group_discard(run_group(run_id), channel)


def event_stream_response(run_id: int, after: int) -> StreamingHttpResponse:
    response = StreamingHttpResponse(
        run_event_stream(run_id, after), content_type="text/event-stream"
    )
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # proxies must not hold events back
    return response
