"""The test harness's flush after a transactional test (tests/conftest.py): a deadlock's victim
is flushed again; anything else fails as before."""

import pytest
from django.core.management.base import CommandError
from django.db import OperationalError

from tests.conftest import FLUSH_ATTEMPTS, flush_again_after_a_deadlock


def failing(*causes):
    """A teardown that fails with each of `causes` in turn (as the flush command wraps a
    database error), then succeeds; and the list of its calls."""
    calls = []

    def teardown(test_case):
        calls.append(test_case)
        if len(calls) <= len(causes):
            raise CommandError("Database test couldn't be flushed.") from causes[len(calls) - 1]

    return teardown, calls


def test_a_flush_that_lost_a_deadlock_is_tried_again():
    teardown, calls = failing(OperationalError("deadlock detected\nDETAIL: Process 1 waits"))
    flush_again_after_a_deadlock(teardown)("case")
    assert calls == ["case", "case"]


def test_a_flush_that_keeps_losing_fails_after_its_attempts():
    deadlocks = [OperationalError("deadlock detected")] * FLUSH_ATTEMPTS
    teardown, calls = failing(*deadlocks)
    with pytest.raises(CommandError):
        flush_again_after_a_deadlock(teardown)("case")
    assert len(calls) == FLUSH_ATTEMPTS


def test_any_other_failure_of_the_flush_is_not_retried():
    teardown, calls = failing(OperationalError("relation does not exist"))
    with pytest.raises(CommandError):
        flush_again_after_a_deadlock(teardown)("case")
    assert len(calls) == 1
