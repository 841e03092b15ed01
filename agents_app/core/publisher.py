"""Sending to the channel layer off the caller's thread: one sender per process.

What a commit publishes is handed to a daemon thread that owns an event loop and sends it, in
the order it was handed over. A worker executing a run (`in_background()`) goes on at once and
is at its next step while its events are sent; anywhere else (a request, a service called from a
shell) `publish` returns once the message is sent, as a channel layer's `group_send` would, so a
page that asks next sees it. The database holds every event, and readers fill a gap from it
(streaming/feeds), so a publish that fails or is lost with its process costs a page a read of the
table, never an event. `flush()` waits for what was handed over so far.

One hand-over is one unit: all the messages of one commit, for all of its groups, sent together.
With channels_redis that is two Redis round trips for the whole unit (who is in each group, then
every message to every member in one pipeline) instead of four round trips per message.
"""

import asyncio
import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)

Send = tuple[str, dict[str, Any]]  # (group, message)

# How long a caller outside a worker's run waits for its message to be sent.
WAIT_SECONDS = 2.0
# Units waiting together are sent together, up to this many.
MAX_UNITS_AT_ONCE = 64

_background: ContextVar[bool] = ContextVar("agentdesk_publish_in_background", default=False)


@contextmanager
def in_background() -> Iterator[None]:
    """While a worker executes a run: publish without waiting for the send."""
    token = _background.set(True)
    try:
        yield
    finally:
        _background.reset(token)


class Publisher:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: asyncio.Queue[list[Send] | None] | None = None
        self._handed = 0  # units handed over, and units done: flush waits for them to meet
        self._done = 0
        self._settled = threading.Condition()

    def submit(self, sends: Sequence[Send]) -> None:
        """Hand `sends` over to be sent after everything handed over before them; outside
        `in_background()`, return once they are sent."""
        if not sends:
            return
        loop, queue = self._running()
        with self._settled:
            self._handed += 1
        loop.call_soon_threadsafe(queue.put_nowait, list(sends))
        if not _background.get():
            self.flush(WAIT_SECONDS)

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until what was handed over so far has been sent (or failed); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._settled:
            target = self._handed
            while self._done < target:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._settled.wait(left)
        return True

    def _running(self) -> tuple[asyncio.AbstractEventLoop, asyncio.Queue]:
        # A forked child (a Celery pool process) inherits the object but not the thread.
        if self._pid != os.getpid() or self._loop is None:
            with self._lock:
                if self._pid != os.getpid() or self._loop is None:
                    self._start()
        assert self._loop is not None and self._queue is not None
        return self._loop, self._queue

    def _start(self) -> None:
        ready = threading.Event()

        def main() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._loop, self._queue = loop, asyncio.Queue()
            ready.set()
            loop.run_until_complete(self._drain(self._queue))

        self._pid = os.getpid()
        self._handed = self._done = 0
        threading.Thread(target=main, name="agentdesk-publisher", daemon=True).start()
        ready.wait()

    async def _drain(self, queue: asyncio.Queue) -> None:
        while True:
            # Whatever was handed over meanwhile goes out with it, in order: a worker faster
            # than Redis costs fewer round trips, not more.
            units = [await queue.get()]
            while not queue.empty() and len(units) < MAX_UNITS_AT_ONCE:
                units.append(queue.get_nowait())
            sends = [send for unit in units for send in unit]
            try:
                await send_unit(sends)
            except Exception:
                groups = sorted({group for group, _ in sends})
                logger.warning("could not publish to %s", ", ".join(groups), exc_info=True)
            finally:
                with self._settled:
                    self._done += len(units)
                    self._settled.notify_all()


async def send_unit(sends: list[Send]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    if _pipelined(layer):
        await _send_pipelined(layer, sends)
    else:
        for group, message in sends:
            await layer.group_send(group, message)


def _pipelined(layer: Any) -> bool:
    """channels_redis's own layer on one Redis (no sharding): its storage is known."""
    from channels_redis.core import RedisChannelLayer

    return type(layer) is RedisChannelLayer and layer.ring_size == 1


async def _send_pipelined(layer: Any, sends: list[Send]) -> None:
    """channels_redis's group_send, for several messages and groups at once: its keys, its
    message format and its capacity rule, in two round trips."""
    connection = layer.connection(0)
    groups = list(dict.fromkeys(group for group, _ in sends))
    now = time.time()
    pipe = connection.pipeline(transaction=False)
    for group in groups:
        key = layer._group_key(group)
        pipe.zremrangebyscore(key, min=0, max=int(now) - layer.group_expiry)
        pipe.zrange(key, 0, -1)
    replies = await pipe.execute()
    members = {
        group: [name.decode("utf8") for name in replies[2 * i + 1]]
        for i, group in enumerate(groups)
    }
    keys: list[bytes | str] = []
    messages: list[bytes] = []
    capacities: list[int] = []
    for group, message in sends:
        mapped, serialized, capacity = layer._map_channel_keys_to_connection(
            members[group], message
        )
        for channel_key in mapped.get(0, []):
            keys.append(channel_key)
            messages.append(serialized[channel_key])
            capacities.append(capacity[channel_key])
    if not keys:
        return
    pipe = connection.pipeline(transaction=False)
    for key in dict.fromkeys(keys):
        pipe.zremrangebyscore(key, min=0, max=int(now) - int(layer.expiry))
    # One script call for every message. A reader pops a channel's lowest score first, and
    # members of one score come out in byte order (random: the serializer's prefix), so each
    # message gets a score of its own, rising in the order handed over.
    pipe.eval(
        _SEND_LUA,
        len(keys),
        *keys,
        *messages,
        *capacities,
        *[_SCORES.next() for _ in keys],
        layer.expiry,
    )
    await pipe.execute()


class _Scores:
    """Rising scores near the clock, for the one sender thread of a process."""

    def __init__(self) -> None:
        self.last = 0.0

    def next(self) -> float:
        self.last = max(time.time(), self.last + 1e-5)
        return self.last


_SCORES = _Scores()


# KEYS: a channel key per message; ARGV: the messages, their channels' capacities, their
# scores, then the expiry. A channel at its capacity drops the message, as channels_redis does.
_SEND_LUA = """
local over_capacity = 0
local n = #KEYS
local expiry = ARGV[#ARGV]
for i = 1, n do
    if redis.call('ZCOUNT', KEYS[i], '-inf', '+inf') < tonumber(ARGV[n + i]) then
        redis.call('ZADD', KEYS[i], ARGV[2 * n + i], ARGV[i])
        redis.call('EXPIRE', KEYS[i], expiry)
    else
        over_capacity = over_capacity + 1
    end
end
return over_capacity
"""

PUBLISHER = Publisher()
