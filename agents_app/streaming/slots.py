"""How many SSE streams each person has open, counted over every web process: a sorted set per
person in Redis (under the channel prefix), one member per open stream, scored by when it
expires. A stream takes its slot before it starts (none left: 429), renews it while it is open
(`SLOT_SECONDS` ahead, every keepalive period) and gives it back when it ends; a process that
dies without giving its slots back loses them within `SLOT_SECONDS`. At most
`SSE_STREAMS_PER_USER` at once."""

import logging
import time

import redis
from asgiref.sync import sync_to_async
from django.conf import settings

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.slots import Slot, slot_key

logger = logging.getLogger(__name__)


def slot_seconds() -> float:
    """How long a slot lasts unless renewed: three keepalive periods, and half a minute more
    for a process that is slow to get round to it."""
    return 3 * settings.SSE_KEEPALIVE_SECONDS + 30


class StreamSlot:
    """One open stream's place under its person's cap (core.slots)."""

    def __init__(self, slot: Slot | None) -> None:
        self.slot = slot
        self.renewed = time.monotonic()

    @classmethod
    def take(cls, user_id: int) -> "StreamSlot":
        """A slot for a new stream of `user_id`; RATE_LIMITED (429) when they have
        SSE_STREAMS_PER_USER open already."""
        cap = settings.SSE_STREAMS_PER_USER
        try:
            slot = Slot.take(slot_key("sse", "user", user_id), cap, slot_seconds())
        except redis.RedisError:
            # The cap guards the server; Redis being away is not the person's doing, so it is
            # not answered with a 429.
            logger.warning("could not count the event streams of user %s", user_id, exc_info=True)
            return cls(None)
        if slot is None:
            raise DomainError(
                ErrorCode.RATE_LIMITED,
                f"You have {cap} event streams open, the most allowed at once: close one "
                "(or read the log as JSON pages) first.",
                {"max_streams": cap},
            )
        return cls(slot)

    async def renew_if_due(self) -> None:
        """Push the slot's expiry ahead, at most once a keepalive period."""
        if self.slot is not None and (
            time.monotonic() - self.renewed >= settings.SSE_KEEPALIVE_SECONDS
        ):
            self.renewed = time.monotonic()
            await sync_to_async(self.slot.renew, thread_sensitive=False)()

    async def give_back(self) -> None:
        if self.slot is not None:
            await sync_to_async(self.slot.give_back, thread_sensitive=False)()
