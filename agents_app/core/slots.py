"""Counted places, shared by every process through Redis: at most N holders of a key at once.

A key is a sorted set (under the channel layer's prefix, so deployments and test sessions that
share a Redis stay apart), one member per holder, scored by when the place expires unless
renewed. Taking one first drops the expired members, then adds one if fewer than N remain, in
one Lua call; a process that dies without giving its places back loses them when they expire.
Used for the event streams one person has open (streaming/slots), the "Download all" zips one
person streams (runs/files_zip) and the requests in flight to one LLM server (worker/llm_gate).
"""

import logging
import os
import threading
import time
import uuid

import redis
from django.conf import settings

from agents_app.core.redis_client import shared_redis

logger = logging.getLogger(__name__)

# KEYS[1]: the set. ARGV: now, the cap, the new member's expiry, the member, the key's own
# expiry in seconds.
_TAKE_LUA = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
    return 0
end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 1
"""


def _redis() -> redis.Redis:
    return shared_redis(settings.CHANNEL_LAYERS["default"]["CONFIG"]["hosts"][0]["address"])


def slot_key(*parts: object) -> str:
    prefix = settings.CHANNEL_LAYERS["default"]["CONFIG"]["prefix"]
    return ":".join([prefix, *(str(part) for part in parts)])


class Slot:
    """One holder's place under a key's cap."""

    def __init__(self, key: str, member: str, seconds: float) -> None:
        self.key = key
        self.member = member
        self.seconds = seconds

    @classmethod
    def take(cls, key: str, cap: int, seconds: float) -> "Slot | None":
        """A place under `key`'s cap of `cap`, lasting `seconds` unless renewed; None when
        the cap is reached. Raises redis.RedisError (the caller decides whether to fail open)."""
        member = uuid.uuid4().hex
        now = time.time()
        taken = _redis().eval(_TAKE_LUA, 1, key, now, cap, now + seconds, member, int(seconds) + 1)
        return cls(key, member, seconds) if taken else None

    def renew(self) -> None:
        try:
            with _redis().pipeline(transaction=False) as pipe:
                self.renew_in(pipe)
                pipe.execute()
        except redis.RedisError:
            logger.warning("could not renew a place under %s", self.key, exc_info=True)

    def renew_in(self, pipe: redis.client.Pipeline) -> None:
        """Push this place's expiry ahead, and its set's with it (the set expires a second
        after the last place it was given or renewed: a place outliving its set would be
        forgotten with it)."""
        pipe.zadd(self.key, {self.member: time.time() + self.seconds}, xx=True)
        pipe.expire(self.key, int(self.seconds) + 1)

    def give_back(self) -> None:
        try:
            _redis().zrem(self.key, self.member)
        except redis.RedisError:  # it expires by itself
            logger.warning("could not give a place under %s back", self.key, exc_info=True)


class Keeper:
    """Keeps this process's places alive while their holders work: one thread renews every
    place it was given each third of its life (pipelined), so a place can be short-lived and a
    process that dies holding some loses them within one life, not after its work's longest
    possible duration. Started with the first place (after any fork)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._slots: dict[str, Slot] = {}
        self._wake = threading.Event()
        self._pid = 0

    def add(self, slot: Slot) -> None:
        with self._lock:
            self._slots[slot.member] = slot
            if self._pid != os.getpid():
                self._pid = os.getpid()
                self._wake = threading.Event()
                threading.Thread(target=self._run, name="slot-keeper", daemon=True).start()
        self._wake.set()

    def remove(self, slot: Slot) -> None:
        with self._lock:
            self._slots.pop(slot.member, None)

    def _run(self) -> None:
        while True:
            with self._lock:
                slots = list(self._slots.values())
            if not slots:
                self._wake.wait()
                self._wake.clear()
                continue
            self._wake.wait(min(slot.seconds for slot in slots) / 3)
            self._wake.clear()
            with self._lock:
                slots = list(self._slots.values())
            if not slots:
                continue
            try:
                with _redis().pipeline(transaction=False) as pipe:
                    for slot in slots:
                        slot.renew_in(pipe)
                    pipe.execute()
            except redis.RedisError:  # the next round tries again before they expire
                logger.warning("could not renew %d place(s)", len(slots), exc_info=True)


KEEPER = Keeper()


def holders(key: str) -> int:
    """How many places under `key` are held now (expired ones not counted)."""
    return int(_redis().zcount(key, time.time(), "+inf"))
