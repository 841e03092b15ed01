"""Counted places in Redis (core/slots.py): a place held by a worker is kept alive while its
holder works (KEEPER), and one whose process died expires within its short life."""

import time

import pytest

from agents_app.core.slots import KEEPER, Slot, holders, slot_key
from tests.support.waiting import wait_for

pytestmark = pytest.mark.dialect  # Redis


def test_a_kept_place_outlives_its_life_and_a_dropped_one_expires_within_it():
    key = slot_key("test", "keeper", time.monotonic_ns())
    kept, dropped = Slot.take(key, 2, 0.9), Slot.take(key, 2, 0.9)
    assert kept and dropped and Slot.take(key, 2, 0.9) is None  # the cap holds
    KEEPER.add(kept)
    try:
        # `dropped` is nobody's now, as after its process died: gone within its life, while
        # `kept` is renewed each third of it.
        wait_for(lambda: holders(key) == 1, timeout=10, interval=0.05, message="expiry")
        deadline = time.monotonic() + 2.0  # more than two lives
        while time.monotonic() < deadline:
            assert holders(key) == 1
            time.sleep(0.1)
    finally:
        KEEPER.remove(kept)
    wait_for(lambda: holders(key) == 0, timeout=10, interval=0.05, message="the kept one to go")
