"""How many SSE streams each person has open, counted over every web process: a sorted set per
person in Redis (under the channel prefix), one member per open stream, scored by when it
expires. A stream takes its slot before it starts (none left: 429), renews it while it is open
(`SLOT_SECONDS` ahead, every keepalive period) and gives it back when it ends; a process that
dies without giving its slots back loses them within `SLOT_SECONDS`. At most
`SSE_STREAMS_PER_USER` at once."""

import logging
import time
import uuid

import redis
from asgiref.sync import sync_to_async
from django.conf import settings

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.redis_client import shared_redis

logger = logging.getLogger(__name__)

# KEYS[1]: the person's set. ARGV: now, the cap, the new member's expiry, the member, the
# key's own expiry in seconds.
_TAKE_LUA = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
    return 0
end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 1
"""


def slot_seconds() -> float:
    """How long a slot lasts unless renewed: three keepalive periods, and half a minute more
    for a process that is slow to get round to it."""
    return 3 * settings.SSE_KEEPALIVE_SECONDS + 30


def _redis() -> redis.Redis:
    return shared_redis(settings.CHANNEL_LAYERS["default"]["CONFIG"]["hosts"][0]["address"])


def _key(user_id: int) -> str:
    # Under the channel layer's prefix: deployments and test sessions sharing a Redis apart.
    prefix = settings.CHANNEL_LAYERS["default"]["CONFIG"]["prefix"]
    return f"{prefix}:sse:user:{user_id}"


class StreamSlot:
    """One open stream's place under its person's cap."""

    def __init__(self, user_id: int, member: str) -> None:
        self.user_id = user_id
        self.member = member
        self.renewed = time.monotonic()

    @classmethod
    def take(cls, user_id: int) -> "StreamSlot":
        """A slot for a new stream of `user_id`; RATE_LIMITED (429) when they have
        SSE_STREAMS_PER_USER open already."""
        cap = settings.SSE_STREAMS_PER_USER
        member = uuid.uuid4().hex
        now = time.time()
        seconds = slot_seconds()
        try:
            taken = _redis().eval(
                _TAKE_LUA, 1, _key(user_id), now, cap, now + seconds, member, int(seconds) + 1
            )
        except redis.RedisError:
            # The cap guards the server; Redis being away is not the person's doing, so it is
            # not answered with a 429.
            logger.warning("could not count the event streams of user %s", user_id, exc_info=True)
            taken = True
        if not taken:
            raise DomainError(
                ErrorCode.RATE_LIMITED,
                f"You have {cap} event streams open, the most allowed at once: close one "
                "(or read the log as JSON pages) first.",
                {"max_streams": cap},
            )
        return cls(user_id, member)

    def _renew(self) -> None:
        try:
            _redis().zadd(_key(self.user_id), {self.member: time.time() + slot_seconds()}, xx=True)
        except redis.RedisError:
            logger.warning("could not renew an event stream's slot", exc_info=True)

    def _give_back(self) -> None:
        try:
            _redis().zrem(_key(self.user_id), self.member)
        except redis.RedisError:  # it expires by itself
            logger.warning("could not give an event stream's slot back", exc_info=True)

    async def renew_if_due(self) -> None:
        """Push the slot's expiry ahead, at most once a keepalive period."""
        if time.monotonic() - self.renewed >= settings.SSE_KEEPALIVE_SECONDS:
            self.renewed = time.monotonic()
            await sync_to_async(self._renew, thread_sensitive=False)()

    async def give_back(self) -> None:
        await sync_to_async(self._give_back, thread_sensitive=False)()
