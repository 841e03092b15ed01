"""Replay then live: a client gets every event it does not hold, in order, exactly once.

The feed reads through database_sync_to_async, which closes the connection it finds: these
tests commit (transaction=True) instead of holding one open transaction."""

import pytest
from asgiref.sync import async_to_sync

from agents_app.core.events import EventType, event_message, events_message
from agents_app.models import RunEvent
from agents_app.streaming.feeds import BATCH, RunFeed, parse_after
from tests.support.runs import make_run

# The tests write the events a feed reads themselves (stored).
pytestmark = pytest.mark.fabricated_events


def stored(run, count: int) -> list[RunEvent]:
    """`count` more events of `run` in the table, after the ones it has."""
    start = RunEvent.objects.filter(run=run).count()
    events = [
        RunEvent(run=run, seq=start + i, type=EventType.RUN_STATUS, payload={"n": start + i})
        for i in range(1, count + 1)
    ]
    return RunEvent.objects.bulk_create(events)


def seqs(messages) -> list[int]:
    return [m["seq"] for m in messages]


@pytest.mark.parametrize(
    "raw, after", [("7", 7), (7, 7), ("0", 0), ("-3", 0), ("junk", 0), ("", 0), (None, 0)]
)
def test_the_seq_a_client_holds_is_a_whole_number_and_junk_means_none(raw, after):
    assert parse_after(raw) == after


@pytest.mark.dialect
@pytest.mark.django_db(transaction=True)
def test_the_backlog_is_every_stored_event_after_the_one_the_client_holds(owner):
    run = make_run(owner)  # its run_queued event is seq 1
    stored(run, 4)
    feed = RunFeed(run.pk, after=2)
    assert seqs(async_to_sync(feed.backlog)()) == [3, 4, 5]
    assert feed.last_seq == 5
    assert async_to_sync(feed.backlog)() == []


@pytest.mark.dialect
@pytest.mark.django_db(transaction=True)
def test_a_backlog_longer_than_one_read_arrives_whole_and_in_order(owner):
    run = make_run(owner)
    stored(run, BATCH * 2 + 5)
    feed = RunFeed(run.pk)
    assert seqs(async_to_sync(feed.backlog)()) == list(range(1, BATCH * 2 + 7))


@pytest.mark.dialect
@pytest.mark.django_db(transaction=True)
def test_the_backlog_holds_only_this_runs_events(owner):
    run, other = make_run(owner), make_run(owner)
    stored(other, 3)
    assert seqs(async_to_sync(RunFeed(run.pk).backlog)()) == [1]


@pytest.mark.dialect
@pytest.mark.django_db(transaction=True)
def test_the_next_live_event_is_delivered_without_reading_the_table(
    owner, django_assert_num_queries
):
    run = make_run(owner)
    (event,) = stored(run, 1)
    feed = RunFeed(run.pk, after=1)
    with django_assert_num_queries(0):
        assert async_to_sync(feed.live)(events_message(run.pk, [event])) == [event_message(event)]
    assert feed.last_seq == 2


@pytest.mark.dialect
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("held", [2, 3])
def test_a_live_event_the_client_already_holds_is_dropped_without_reading_the_table(
    owner, held, django_assert_num_queries
):
    run = make_run(owner)
    events = stored(run, 2)  # seqs 2 and 3
    feed = RunFeed(run.pk, after=held)
    with django_assert_num_queries(0):
        assert async_to_sync(feed.live)(events_message(run.pk, [events[0]])) == []
    assert feed.last_seq == held


@pytest.mark.dialect
@pytest.mark.django_db(transaction=True)
def test_a_live_event_after_a_gap_brings_the_missed_ones_from_the_table_first(owner):
    run = make_run(owner)
    events = stored(run, 3)  # seqs 2, 3, 4; the client holds 1 and missed 2 and 3
    feed = RunFeed(run.pk, after=1)
    assert seqs(async_to_sync(feed.live)(events_message(run.pk, [events[2]]))) == [2, 3, 4]
    # ... and then the live messages it skipped over are not delivered again.
    assert async_to_sync(feed.live)(events_message(run.pk, [events[0]])) == []
    assert async_to_sync(feed.live)(events_message(run.pk, [events[2]])) == []


@pytest.mark.dialect
@pytest.mark.django_db(transaction=True)
def test_a_feed_for_a_client_holding_nothing_passes_the_first_event_on_at_once(
    owner, django_assert_num_queries
):
    run = make_run(owner)
    first = RunEvent.objects.get(run=run, seq=1)
    feed = RunFeed(run.pk)
    with django_assert_num_queries(0):
        assert async_to_sync(feed.live)(events_message(run.pk, [first])) == [event_message(first)]


@pytest.mark.dialect
@pytest.mark.django_db(transaction=True)
def test_one_commits_events_arrive_in_one_message_and_what_is_held_of_them_is_dropped(
    owner, django_assert_num_queries
):
    run = make_run(owner)
    events = stored(run, 3)  # seqs 2, 3, 4 committed together; the client holds 2
    feed = RunFeed(run.pk, after=2)
    with django_assert_num_queries(0):
        assert seqs(async_to_sync(feed.live)(events_message(run.pk, events))) == [3, 4]
    assert feed.last_seq == 4


@pytest.mark.dialect
@pytest.mark.django_db(transaction=True)
def test_a_commit_after_a_gap_brings_the_missed_ones_from_the_table_once(owner):
    run = make_run(owner)
    events = stored(run, 4)  # seqs 2..5; the client holds 1, missed 2, gets 3..5 in one message
    feed = RunFeed(run.pk, after=1)
    assert seqs(async_to_sync(feed.live)(events_message(run.pk, events[1:]))) == [2, 3, 4, 5]
