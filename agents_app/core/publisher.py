"""Sending to the channel layer off the caller's thread: one sender per process.

What a commit publishes is handed to a daemon thread that sends it with a synchronous Redis
client, in the order it was handed over. A worker executing a run (`in_background()`) goes on
at once and is at its next step while its events are sent; anywhere else (a request, a service
called from a shell) `publish` returns once the message is sent, as a channel layer's
`group_send` would, so a page that asks next sees it. The database holds every event, and
readers fill a gap from it (streaming/feeds), so a publish that fails or is lost with its
process costs a page a read of the table, never an event. `flush()` waits for what was handed
over so far.

One hand-over is one unit: all the messages of one commit, for all of its groups, sent together.
With channels_redis that is two Redis round trips for whatever units wait (who is in each group,
then every message to every member in one pipeline) instead of four round trips per message.
"""

import asyncio
import collections
import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import redis
from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)

Send = tuple[str, dict[str, Any]]  # (group, message)

# How long a caller outside a worker's run waits for its message to be sent.
WAIT_SECONDS = 2.0
# How long a worker's unit may wait for the next ones, to go out with them.
LINGER_SECONDS = 0.002

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
        self._pending: collections.deque[list[Send]] = collections.deque()
        # Set when units wait; `_urgent` when somebody waits for one (not a worker's).
        self._wake = threading.Event()
        self._urgent = threading.Event()
        self._handed = 0  # units handed over, and units done: flush waits for them to meet
        self._done = 0
        self._settled = threading.Condition()

    def submit(self, sends: Sequence[Send]) -> None:
        """Hand `sends` over to be sent after everything handed over before them; outside
        `in_background()`, return once they are sent."""
        if not sends:
            return
        self._running()
        with self._settled:
            self._handed += 1
        self._pending.append(list(sends))
        background = _background.get()
        if not background:
            self._urgent.set()
        self._wake.set()
        if not background:
            self.flush(WAIT_SECONDS)

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until what was handed over so far has been sent (or failed); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._settled:
            target = self._handed
            if self._done < target:
                self._urgent.set()  # what lingers goes now
            while self._done < target:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._settled.wait(left)
        return True

    def _running(self) -> None:
        # A forked child (a Celery pool process) inherits the object but not the thread.
        if self._pid != os.getpid():
            with self._lock:
                if self._pid != os.getpid():
                    self._start()

    def _start(self) -> None:
        self._pid = os.getpid()
        self._handed = self._done = 0
        self._pending.clear()
        self._wake, self._urgent = threading.Event(), threading.Event()
        threading.Thread(target=self._drain, name="agentdesk-publisher", daemon=True).start()

    def _drain(self) -> None:
        """The sender thread: a plain thread that sends with a synchronous Redis client. A
        worker's units linger up to LINGER_SECONDS, so that the units its next commits hand
        over go out with them, without waking this thread for each; a unit somebody waits for
        (or a flush) ends the wait at once. Whatever waits is sent together, in the order
        handed over. (An event loop here cost the worker a third of a step: every hand-over
        woke it through a pipe, and its callbacks fought the worker's thread for the GIL.)"""
        sender = Sender()
        wake, urgent = self._wake, self._urgent
        while True:
            wake.wait()
            if not urgent.is_set():
                urgent.wait(LINGER_SECONDS)
            urgent.clear()
            wake.clear()
            taken = []
            while self._pending:
                taken.append(self._pending.popleft())
            if not taken:
                continue
            sends = [send for unit in taken for send in unit]
            try:
                sender.send(sends)
            except Exception:
                groups = sorted({group for group, _ in sends})
                logger.warning("could not publish to %s", ", ".join(groups), exc_info=True)
            finally:
                with self._settled:
                    self._done += len(taken)
                    self._settled.notify_all()


class Sender:
    """How the sender thread sends: channels_redis's layer on one Redis written directly, with
    its keys, message format and capacity rule; any other layer through its group_send, on an
    event loop of this thread's own."""

    def __init__(self) -> None:
        self._client: Any = None
        self._layer: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def send(self, sends: list[Send]) -> None:
        layer = get_channel_layer()
        if layer is None:
            return
        if _pipelined(layer):
            send_pipelined(layer, self._redis(layer), sends)
            return
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        for group, message in sends:
            self._loop.run_until_complete(layer.group_send(group, message))

    def _redis(self, layer: Any) -> Any:
        if self._client is None or self._layer is not layer:
            host = dict(layer.hosts[0])
            if "address" in host:
                pool = redis.ConnectionPool.from_url(host.pop("address"), **host)
            else:
                pool = redis.ConnectionPool(**host)
            self._client, self._layer = redis.Redis(connection_pool=pool), layer
        return self._client


def _pipelined(layer: Any) -> bool:
    """channels_redis's own layer on one Redis (no sharding, no Sentinel): its storage is
    known."""
    from channels_redis.core import RedisChannelLayer

    return (
        type(layer) is RedisChannelLayer
        and layer.ring_size == 1
        and "master_name" not in layer.hosts[0]
    )


def send_pipelined(layer: Any, client: Any, sends: list[Send]) -> None:
    """channels_redis's group_send, for several messages and groups at once: its keys, its
    message format and its capacity rule, in two round trips (one when nobody listens)."""
    groups = list(dict.fromkeys(group for group, _ in sends))
    now = time.time()
    pipe = client.pipeline(transaction=False)
    for group in groups:
        key = layer._group_key(group)
        pipe.zremrangebyscore(key, min=0, max=int(now) - layer.group_expiry)
        pipe.zrange(key, 0, -1)
    replies = pipe.execute()
    members = {
        group: [name.decode("utf8") for name in replies[2 * i + 1]]
        for i, group in enumerate(groups)
    }
    keys: list[bytes | str] = []
    messages: list[bytes] = []
    capacities: list[int] = []
    for group, message in sends:
        if not members[group]:
            continue
        mapped, serialized, capacity = layer._map_channel_keys_to_connection(
            members[group], message
        )
        for channel_key in mapped.get(0, []):
            keys.append(channel_key)
            messages.append(serialized[channel_key])
            capacities.append(capacity[channel_key])
    if not keys:
        return
    pipe = client.pipeline(transaction=False)
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
    pipe.execute()


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
