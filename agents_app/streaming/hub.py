"""One subscription per group per process, fanned out to every SSE stream of the process that
follows the group.

A WebSocket consumer has a channel of its own; an SSE stream used to have one too, so 500
streams on one run were 500 members of `run.<id>`, and every stream joining, receiving and
leaving went through the channel layer's connection pool, 100 connections a process: past it
streams failed with MaxConnectionsError (bench/sse_streams.py: 441 of 500 started). Here the
process joins a group once, with one channel, reads it with one receive (all of a process's
local channels share one blocking pop) and hands each message to every stream's
`Inbox`. The first stream of a group joins it, the last one leaves it.

A hub belongs to one event loop (daphne has one; tests start several)."""

import asyncio
import contextlib
import logging
import weakref
from dataclasses import dataclass, field
from typing import Any

from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)

# What an inbox keeps for a stream that does not read: the oldest go first, as the channel
# layer drops messages to a full channel. The streams fill a gap in a run's events from the
# table (streaming.feeds), so a dropped message costs a read, never an event.
INBOX_CAPACITY = 100
# After the channel layer failed to receive (Redis gone), before trying again.
RETRY_SECONDS = 1.0


class Inbox(asyncio.Queue):
    """One stream's messages, from every group it follows; bounded, dropping the oldest."""

    def __init__(self) -> None:
        super().__init__(maxsize=INBOX_CAPACITY)

    def put_nowait(self, item: Any) -> None:
        if self.full():
            self.get_nowait()
        super().put_nowait(item)


@dataclass(eq=False)
class _Group:
    inboxes: set[Inbox] = field(default_factory=set)
    channel: str = ""
    joined: asyncio.Future | None = None
    reader: asyncio.Task | None = None


class Hub:
    def __init__(self) -> None:
        self.layer = get_channel_layer()
        self.groups: dict[str, _Group] = {}

    def subscribers(self, group: str) -> int:
        """How many streams of this process follow `group` (through one subscription)."""
        entry = self.groups.get(group)
        return len(entry.inboxes) if entry else 0

    async def subscribe(self, group: str, inbox: Inbox) -> None:
        """From now on `inbox` gets every message sent to `group`. Returns once the process
        is in the group, so what is sent after this returns arrives."""
        entry = self.groups.get(group)
        if entry is None:
            entry = self.groups[group] = _Group()
            entry.joined = asyncio.ensure_future(self._join(group, entry))
        entry.inboxes.add(inbox)
        assert entry.joined is not None
        try:
            await asyncio.shield(entry.joined)
        except BaseException:
            await self.unsubscribe(group, inbox)
            raise

    async def unsubscribe(self, group: str, inbox: Inbox) -> None:
        entry = self.groups.get(group)
        if entry is None or inbox not in entry.inboxes:
            return
        entry.inboxes.discard(inbox)
        if entry.inboxes:
            return
        # The last one: leave. A stream that subscribes from now on starts a new entry.
        del self.groups[group]
        assert entry.joined is not None
        with contextlib.suppress(Exception):
            await asyncio.shield(entry.joined)
        if entry.reader is not None:
            entry.reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await entry.reader
        if entry.channel:
            try:
                await self.layer.group_discard(group, entry.channel)
            except Exception:  # Redis away: the channel expires from the group by itself
                logger.warning("could not leave %s", group, exc_info=True)

    async def _join(self, group: str, entry: _Group) -> None:
        entry.channel = await self.layer.new_channel()
        await self.layer.group_add(group, entry.channel)
        entry.reader = asyncio.ensure_future(self._read(group, entry))

    async def _read(self, group: str, entry: _Group) -> None:
        while True:
            try:
                message = await self.layer.receive(entry.channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.warning("could not receive for %s", group, exc_info=True)
                await asyncio.sleep(RETRY_SECONDS)
                continue
            for inbox in list(entry.inboxes):
                inbox.put_nowait(message)


_HUBS: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Hub]" = weakref.WeakKeyDictionary()


def process_hub() -> Hub:
    """The hub of the running event loop."""
    loop = asyncio.get_running_loop()
    hub = _HUBS.get(loop)
    if hub is None:
        hub = _HUBS[loop] = Hub()
    return hub
