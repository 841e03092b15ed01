"""The process's sender (core.publisher): a worker's units linger to go out together, anything
somebody waits for goes at once, in the order handed over, and a failed send stops nothing.
What reaches a WebSocket through Redis is the streaming tests' subject."""

import threading
import time

import pytest

from agents_app.core import publisher
from agents_app.core.publisher import Publisher, in_background


@pytest.fixture
def sent(monkeypatch):
    """The batches the sender thread sends, instead of sending them."""

    class Batches(list):
        fail_next = threading.Event()

    batches = Batches()
    fail = batches.fail_next

    def send(self, sends):
        if fail.is_set():
            fail.clear()
            raise ConnectionError("Redis went away")
        batches.append(list(sends))

    monkeypatch.setattr(publisher.Sender, "send", send)
    return batches


def unit(n: int) -> list[tuple[str, dict]]:
    return [("run.1", {"type": "run.events", "n": n}), ("user.1", {"type": "run.changed", "n": n})]


def test_a_workers_units_linger_and_go_out_together_in_order(sent, monkeypatch):
    monkeypatch.setattr(publisher, "LINGER_SECONDS", 30.0)
    pub = Publisher()
    with in_background():
        for n in range(3):
            pub.submit(unit(n))  # returns at once: nobody waits for a worker's events
    assert sent == []

    started = time.monotonic()
    assert pub.flush(10)  # a flush ends the lingering

    assert time.monotonic() - started < 10
    assert sent == [unit(0) + unit(1) + unit(2)]


def test_a_unit_somebody_waits_for_is_sent_at_once_after_what_lingers(sent, monkeypatch):
    monkeypatch.setattr(publisher, "LINGER_SECONDS", 30.0)
    pub = Publisher()
    with in_background():
        pub.submit(unit(0))

    started = time.monotonic()
    pub.submit(unit(1))  # a request's: returns once sent

    assert time.monotonic() - started < 10
    assert [send for batch in sent for send in batch] == unit(0) + unit(1)


def test_a_failed_send_is_logged_and_the_next_goes_out(sent, caplog):
    pub = Publisher()
    sent.fail_next.set()

    pub.submit(unit(0))
    pub.submit(unit(1))

    assert sent == [unit(1)]
    assert "could not publish to run.1, user.1" in caplog.text
    assert pub.flush(1)


def test_nothing_to_send_hands_nothing_over(sent):
    pub = Publisher()
    pub.submit([])

    assert pub.flush(0.01)
    assert sent == []
