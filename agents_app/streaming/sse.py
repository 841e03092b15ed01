"""Server-sent events: the same replay-then-live feed as the WebSockets, for HTTP clients.

The streams of a process share one subscription per group (streaming.hub): 500 streams on one
run are one member of its group, not 500. A person has at most SSE_STREAMS_PER_USER streams
open over every web process (streaming.slots; 429 beyond). A stream follows the credential it
was opened with (streaming.credentials): when the key is revoked or the session logged out it
sends a `closed` event (code 4401, as a socket's close) and ends."""

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.http import HttpRequest, StreamingHttpResponse

from agents_app.core.events import CREDENTIAL_CLOSED, EventType, run_group
from agents_app.models import Run
from agents_app.streaming.credentials import (
    UNAUTHORIZED,
    Credential,
    credential_alive,
    request_credential,
)
from agents_app.streaming.feeds import RunFeed
from agents_app.streaming.hub import Inbox, process_hub
from agents_app.streaming.messages import SocketMessage
from agents_app.streaming.slots import StreamSlot


def sse_event(event: dict[str, Any]) -> str:
    data = {"seq": event["seq"], "payload": event["payload"], "created_at": event["created_at"]}
    return f"id: {event['seq']}\nevent: {event['event_type']}\ndata: {json.dumps(data)}\n\n"


def sse_token(message: dict[str, Any]) -> str:
    data = {k: message.get(k) for k in ("token", "phase", "step_index", "reasoning")}
    return f"event: {SocketMessage.STREAM_TOKEN}\ndata: {json.dumps(data)}\n\n"


def sse_closed(reason: str) -> str:
    """The last event of a stream whose credential ended."""
    data = {"code": UNAUTHORIZED, "reason": reason}
    return f"event: {SocketMessage.CLOSED}\ndata: {json.dumps(data)}\n\n"


@database_sync_to_async
def _is_terminal(run_id: int) -> bool:
    return Run.objects.get(pk=run_id).is_terminal


def _ends(events: list[dict[str, Any]]) -> bool:
    return any(e["event_type"] == EventType.RESULT for e in events)


async def run_event_stream(
    run_id: int,
    after: int,
    *,
    credential: Credential | None = None,
    slot: StreamSlot | None = None,
) -> AsyncIterator[str]:
    """Events after `after`, then live ones, until the run's `result` event has been sent; a
    keepalive comment every SSE_KEEPALIVE_SECONDS while nothing happens; a `closed` event
    and the end when `credential` ends. `slot` is given back at the end."""
    hub = process_hub()
    inbox = Inbox()
    groups = [run_group(run_id)] + ([credential.group] if credential else [])
    try:
        # Subscribed before reading the backlog: whatever commits after the read arrives live.
        for group in groups:
            await hub.subscribe(group, inbox)
        if credential is not None and not await credential_alive(credential):
            yield sse_closed("ended")  # ended between the request's check and joining
            return
        feed = RunFeed(run_id, after)
        yield "retry: 2000\n\n"
        events = await feed.backlog()
        for event in events:
            yield sse_event(event)
        if _ends(events):
            return
        if await _is_terminal(run_id):
            # It ended after the backlog was read: what it committed since, its result too,
            # is in the table (its publish may come after this stream has gone).
            for event in await feed.backlog():
                yield sse_event(event)
            return
        while True:
            try:
                message = await asyncio.wait_for(inbox.get(), settings.SSE_KEEPALIVE_SECONDS)
            except TimeoutError:
                # Quiet: if the run ended and its publish was lost, the table still has it.
                if await _is_terminal(run_id):
                    for event in await feed.backlog():
                        yield sse_event(event)
                    return
                yield ": keepalive\n\n"
                message = None
            if slot is not None:
                await slot.renew_if_due()
            if message is None:
                continue
            if message.get("type") == CREDENTIAL_CLOSED:
                yield sse_closed(message.get("reason", ""))
                return
            if message.get("type") == "run.token":
                yield sse_token(message)
                continue
            events = await feed.live(message)
            for event in events:
                yield sse_event(event)
            if _ends(events):
                return
    finally:
        for group in groups:
            await hub.unsubscribe(group, inbox)
        if slot is not None:
            await slot.give_back()


def event_stream_response(request: HttpRequest, run_id: int, after: int) -> StreamingHttpResponse:
    """The stream of `run_id` for the authenticated `request`: it takes one of the person's
    stream slots first (DomainError RATE_LIMITED when none is left) and follows the request's
    credential."""
    credential = request_credential(request)
    slot = StreamSlot.take(request.user.pk)
    stream = run_event_stream(run_id, after, credential=credential, slot=slot)
    response = StreamingHttpResponse(stream, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # proxies must not hold events back
    return response
