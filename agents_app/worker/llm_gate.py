"""A run's model requests wait their turn: at most LLM_MAX_IN_FLIGHT requests in flight to one
LLM server, over every worker (core.slots, keyed by the server's URL); the embedded llama.cpp
answers only a few at once (config/local_model.SLOTS), so it gets no more than that. The rest
queue here instead of piling onto a server that would make them time out. The wait is not the
request's: a request's timeout starts when it is sent.

Before it waits, a request gives its thread's database connection back to the process's pool
(worker.connections): a run holds a connection for a transaction, never for a model's answer.
"""

import hashlib
import logging
import random
import threading

import redis
from django.conf import settings

from agents_app.core.slots import KEEPER, Slot, slot_key
from agents_app.engine.llm import LLMProvider, LLMRequest, LLMResponse
from agents_app.worker.connections import give_back

logger = logging.getLogger(__name__)

# How often a waiting request looks for a free place (with jitter, so waiters spread out).
POLL_SECONDS = 0.05
# How long a place lasts unless renewed (core.slots.KEEPER renews it each third of that while
# its request lasts): a worker that dies mid-request frees its places within this.
PLACE_SECONDS = 30.0


def in_flight_cap(base_url: str) -> int:
    cap = settings.LLM_MAX_IN_FLIGHT
    if settings.LOCAL_MODEL_IN_USE and base_url.rstrip("/") == settings.LLM_BASE_URL.rstrip("/"):
        from config.local_model import SLOTS

        cap = min(cap, SLOTS)
    return cap


def server_key(base_url: str) -> str:
    return slot_key("llm", "in-flight", hashlib.sha256(base_url.encode()).hexdigest()[:16])


class GatedProvider:
    """Wraps a provider: each request waits for a place among the server's requests in flight
    (with its database connection given back first), and gives it back when answered."""

    def __init__(self, provider: LLMProvider, base_url: str) -> None:
        self.provider = provider
        self.base_url = base_url
        self.model = getattr(provider, "model", "")

    def complete(self, request: LLMRequest) -> LLMResponse:
        give_back()
        slot = wait_for_place(self.base_url)
        if slot is not None:
            KEEPER.add(slot)  # renewed while the request lasts; a dead worker's expire
        try:
            return self.provider.complete(request)
        finally:
            if slot is not None:
                KEEPER.remove(slot)
                slot.give_back()

    def close(self) -> None:
        close = getattr(self.provider, "close", None)
        if close is not None:
            close()


def wait_for_place(base_url: str, stop: threading.Event | None = None) -> Slot | None:
    """A place among `base_url`'s requests in flight, once one is free. None when Redis cannot
    be asked: the cap protects the server, and a Redis blip must not stop every run."""
    key, cap = server_key(base_url), in_flight_cap(base_url)
    wait = stop or threading.Event()
    while True:
        try:
            slot = Slot.take(key, cap, PLACE_SECONDS)
        except redis.RedisError:
            logger.warning("could not count the requests in flight to the LLM", exc_info=True)
            return None
        if slot is not None:
            return slot
        if wait.wait(POLL_SECONDS * (0.5 + random.random())):
            return None
