"""Cheap control reads: has a person asked a run to stop or pause, or has staff moved the kill
switch, since a worker last looked?

The database holds the truth (`Run.cancel_requested`, `Run.pause_requested`, `KillSwitch`); a
worker also reads the run's row under the lock of every commit. Between two commits it would
have to query the run at every checkpoint to notice a cancel in time. Instead, whoever changes
one of those rows bumps a counter in Redis (`signal_run`, `signal_kill_switch`), and the worker's
`Watch` reads both counters in one round trip, at most every LOOK_SECONDS: it queries the
database only when one moved. A counter is bumped at once and again after the commit, so a
watcher can never see the bump before it could see the row; a Redis that is down makes every
look a database read.

A change made in another process is therefore seen at most LOOK_SECONDS late (a run's own flags
sooner when the worker commits first: they come back with every commit); one made in this
process is seen at the next checkpoint, as the signal also tells this process's watches. A
step that takes milliseconds does not pay a round trip at each of its checkpoints.
"""

import logging
import os
import time
from typing import Any

import redis
from django.conf import settings
from django.db import transaction

logger = logging.getLogger(__name__)

KILL_SWITCH_KEY = "agentdesk:control:kill-switch"
# A counter nobody bumps for a day is dropped; a watcher that then sees None reads the rows.
KEY_SECONDS = 86_400
# How stale a worker's view of the counters may be: a look within this long of the last reuses it.
LOOK_SECONDS = 0.05

_clients: dict[int, Any] = {}


def run_key(run_id: int) -> str:
    return f"agentdesk:control:run:{run_id}"


def _client() -> Any:
    client = _clients.get(os.getpid())  # not shared with a forked child
    if client is None:
        url = settings.REDIS_URL or "redis://127.0.0.1:6379/0"
        client = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
        _clients.clear()
        _clients[os.getpid()] = client
    return client


def _bump(key: str) -> None:
    try:
        pipe = _client().pipeline(transaction=False)
        pipe.incr(key)
        pipe.expire(key, KEY_SECONDS)
        pipe.execute()
    except redis.RedisError:
        logger.warning("could not signal %s; workers see it at their next commit", key)


class _Signals:
    """How many signals this process has sent: a watch that sees it move looks again at once."""

    sent = 0


def _send(key: str) -> None:
    _Signals.sent += 1
    _bump(key)


def _signal(key: str) -> None:
    _send(key)
    if transaction.get_connection().in_atomic_block:
        transaction.on_commit(lambda: _send(key))


def signal_run(run_id: int) -> None:
    """A run's cancel_requested or pause_requested is being changed in this transaction."""
    _signal(run_key(run_id))


def signal_kill_switch() -> None:
    """The kill switch is being engaged or released in this transaction."""
    _signal(KILL_SWITCH_KEY)


_UNKNOWN = object()  # before the first look, or after Redis could not tell


class Watch:
    """What one worker last saw of a run's counter and of the kill switch's. Each is compared
    with what was seen of it the last time that one was asked about, so a look for a cancel
    never hides a kill switch that moved from the next decision, nor the other way round."""

    RUN, SWITCH = 0, 1

    def __init__(self, run_id: int):
        self.keys = [run_key(run_id), KILL_SWITCH_KEY]
        # What was last read of the counters, and when; what each was when last asked about.
        self.read: list[Any] | None = None
        self.read_at = 0.0
        self.read_after = -1  # _Signals.sent when they were read
        self.seen: list[Any] = [_UNKNOWN, _UNKNOWN]

    def _look(self, *which: int) -> list[bool]:
        now = time.monotonic()
        if (
            self.read is None
            or now - self.read_at >= LOOK_SECONDS
            or self.read_after != _Signals.sent
        ):
            self.read_after = _Signals.sent
            try:
                self.read = _client().mget(self.keys)
            except redis.RedisError:
                self.read, self.seen = None, [_UNKNOWN, _UNKNOWN]
                return [True for _ in which]
            self.read_at = now
        read = self.read
        moved = [self.seen[i] is _UNKNOWN or read[i] != self.seen[i] for i in which]
        for i in which:
            self.seen[i] = read[i]
        return moved

    def moved(self) -> tuple[bool, bool]:
        """(the run's cancel or pause may have changed, the kill switch may have) since each
        was last asked about: True the first time, and whenever Redis cannot tell."""
        run, switch = self._look(self.RUN, self.SWITCH)
        return run, switch

    def run_moved(self) -> bool:
        """The run's cancel or pause may have changed since it was last asked about."""
        return self._look(self.RUN)[0]

    def switch_moved(self) -> bool:
        """The kill switch may have moved since it was last asked about."""
        return self._look(self.SWITCH)[0]
