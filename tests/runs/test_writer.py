"""The fenced writer: one table of allowed status changes, a parked or finished run holds no
lease, time parked is not time worked, and a run's events are numbered without a gap."""

import threading
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.test import TestCase
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agents_app.core.events import EventType
from agents_app.models import Run, RunEvent, RunStatus, Task
from agents_app.runs import writer as writer_module
from agents_app.runs.lease import Lease
from agents_app.runs.lifecycle import finish
from agents_app.runs.recipes import recipe_for
from agents_app.runs.services import run_create
from agents_app.runs.writer import (
    InvalidTransition,
    LeaseLost,
    RunWriter,
    fenced_run,
    locked_run,
)
from tests.support.runs import advance
from tests.support.runs import make_run as queued_run
from tests.support.teams import make_head
from tests.support.waiting import wait_for

pytestmark = pytest.mark.dialect


def make_run(owner) -> Run:
    """A queued run as the database holds it (its run_queued event counted)."""
    run = queued_run(owner)
    run.refresh_from_db()
    return run


def held(run: Run, token: str = "worker-1") -> Run:
    """The run as a worker holding its lease sees it."""
    Run.objects.filter(pk=run.pk).update(
        lease_owner=token, lease_expires_at=timezone.now() + timedelta(seconds=60)
    )
    run.refresh_from_db()
    return run


def parked(run: Run, status: str, *, ago: float, parked_seconds: float = 0.0) -> Run:
    """The run parked in `status` since `ago` seconds."""
    Run.objects.filter(pk=run.pk).update(
        status=status,
        resume_status=RunStatus.RUNNING,
        parked_at=timezone.now() - timedelta(seconds=ago),
        parked_seconds=parked_seconds,
    )
    run.refresh_from_db()
    return run


@pytest.mark.django_db
def test_a_status_change_the_table_forbids_is_refused_and_writes_nothing(owner):
    run = make_run(owner)
    events_before = RunEvent.objects.filter(run=run).count()
    with pytest.raises(InvalidTransition), locked_run(run.pk) as w:
        w.transition(RunStatus.SUCCEEDED)
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED
    assert RunEvent.objects.filter(run=run).count() == events_before


@pytest.mark.django_db
@pytest.mark.parametrize("status", [RunStatus.PAUSED, RunStatus.WAITING_APPROVAL])
def test_a_run_that_parks_gives_up_its_lease_and_records_since_when(owner, status):
    run = held(advance(make_run(owner), RunStatus.RUNNING))
    with locked_run(run.pk, "worker-1") as w:
        w.transition(status)
    run.refresh_from_db()
    assert (run.status, run.lease_owner, run.lease_expires_at) == (status, "", None)
    assert timezone.now() - run.parked_at < timedelta(seconds=30)


@pytest.mark.django_db
@pytest.mark.parametrize("status", [RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.SUCCEEDED])
def test_a_run_that_ends_gives_up_its_lease_and_records_when(owner, status):
    run = held(advance(make_run(owner), RunStatus.VERIFYING))
    with locked_run(run.pk, "worker-1") as w:
        w.transition(status)
    run.refresh_from_db()
    assert (run.status, run.lease_owner, run.lease_expires_at) == (status, "", None)
    assert timezone.now() - run.finished_at < timedelta(seconds=30)


@pytest.mark.django_db
def test_a_run_that_moves_on_keeps_its_lease(owner):
    run = held(advance(make_run(owner), RunStatus.RUNNING))
    with locked_run(run.pk, "worker-1") as w:
        w.transition(RunStatus.VERIFYING)
    run.refresh_from_db()
    assert run.lease_owner == "worker-1"
    assert run.lease_expires_at is not None
    assert run.finished_at is None and run.parked_at is None


@pytest.mark.django_db
@pytest.mark.parametrize("status", [RunStatus.PAUSED, RunStatus.WAITING_APPROVAL])
def test_the_time_a_run_was_parked_is_added_to_what_it_was_parked_before(owner, status):
    run = parked(make_run(owner), status, ago=30, parked_seconds=5)
    with locked_run(run.pk) as w:
        w.transition(RunStatus.RUNNING)
    run.refresh_from_db()
    assert 35 <= run.parked_seconds < 45
    assert run.parked_at is None


@pytest.mark.django_db
def test_a_parked_run_that_ends_counts_its_parked_time_too(owner):
    run = parked(make_run(owner), RunStatus.WAITING_APPROVAL, ago=20)
    with locked_run(run.pk) as w:
        w.transition(RunStatus.CANCELLED)
    run.refresh_from_db()
    assert 20 <= run.parked_seconds < 30
    assert run.parked_at is None


@pytest.mark.django_db
def test_a_clock_that_went_back_while_parked_adds_no_parked_time(owner):
    run = parked(make_run(owner), RunStatus.PAUSED, ago=-60, parked_seconds=5)
    with locked_run(run.pk) as w:
        w.transition(RunStatus.RUNNING)
    run.refresh_from_db()
    assert run.parked_seconds == 5


@pytest.mark.django_db
def test_a_run_starts_the_first_time_it_plans_and_a_replan_keeps_that_start(owner):
    run = make_run(owner)
    assert run.started_at is None
    run = advance(run, RunStatus.PLANNING)
    started = run.started_at
    assert timezone.now() - started < timedelta(seconds=30)
    with locked_run(run.pk) as w:
        w.transition(RunStatus.RUNNING)
        w.transition(RunStatus.VERIFYING)
        w.transition(RunStatus.PLANNING)  # a replan
    run.refresh_from_db()
    assert run.started_at == started


@pytest.mark.django_db
def test_only_planning_starts_a_run(owner):
    run = make_run(owner)
    with locked_run(run.pk) as w:
        w.transition(RunStatus.PAUSED)
    run.refresh_from_db()
    assert run.started_at is None


@pytest.mark.django_db
def test_each_status_change_is_an_event_with_the_next_seq(owner):
    run = make_run(owner)
    first = run.event_seq
    advance(run, RunStatus.RUNNING)
    events = list(RunEvent.objects.filter(run=run, seq__gt=first).order_by("seq"))
    assert [(e.seq, e.type, e.payload["status"]) for e in events] == [
        (first + 1, EventType.RUN_STATUS, RunStatus.PLANNING),
        (first + 2, EventType.RUN_STATUS, RunStatus.RUNNING),
    ]
    run.refresh_from_db()
    assert run.event_seq == first + 2


@pytest.mark.django_db
def test_an_event_is_handed_back_with_its_seq_and_stored_with_the_commit(owner):
    run = make_run(owner)
    with locked_run(run.pk) as w:
        event = w.event(EventType.RUN_STATUS, {"status": "x"})
        assert event.seq == run.event_seq + 1
        assert not RunEvent.objects.filter(run=run, seq=event.seq).exists()
    stored = RunEvent.objects.get(run=run, seq=event.seq)
    assert stored.payload == {"status": "x"}
    run.refresh_from_db()
    assert run.event_seq == event.seq


@pytest.mark.django_db
@pytest.mark.fabricated_events  # its events have no payload: the seqs are what it tests
def test_the_next_writer_continues_the_seq_where_the_last_one_stopped(owner):
    run = make_run(owner)
    with locked_run(run.pk) as w:
        a = w.event(EventType.RUN_STATUS)
    with locked_run(run.pk) as w:
        b = w.event(EventType.RUN_STATUS)
    assert b.seq == a.seq + 1
    assert RunEvent.objects.filter(run=run, seq__in=[a.seq, b.seq]).count() == 2


@pytest.mark.django_db
@pytest.mark.fabricated_events  # its events have no payload: the seqs are what it tests
def test_a_writer_flushed_twice_writes_nothing_the_second_time(
    owner, django_assert_num_queries, django_capture_on_commit_callbacks
):
    run = make_run(owner)
    writer = RunWriter(Run.objects.get(pk=run.pk))
    writer.set(final_response="done")
    writer.event(EventType.RUN_STATUS)
    with django_capture_on_commit_callbacks() as published:
        writer.flush()
        with django_assert_num_queries(0):
            writer.flush()
    assert len(published) == 1  # one publish, for the first flush's events


@pytest.mark.django_db
def test_a_writer_with_nothing_to_write_does_not_touch_the_database(
    owner, django_assert_num_queries, django_capture_on_commit_callbacks
):
    run = make_run(owner)
    writer = RunWriter(Run.objects.get(pk=run.pk))
    with django_capture_on_commit_callbacks() as published, django_assert_num_queries(0):
        writer.flush()
    assert published == []


@pytest.mark.django_db
def test_only_the_changed_fields_are_saved(owner):
    run = make_run(owner)
    writer = RunWriter(Run.objects.get(pk=run.pk))
    Run.objects.filter(pk=run.pk).update(final_response="written by someone else")
    writer.set(error_message="mine")
    writer.flush()
    run.refresh_from_db()
    assert (run.final_response, run.error_message) == ("written by someone else", "mine")


@pytest.mark.django_db
def test_a_worker_that_lost_its_lease_cannot_commit(owner):
    run = held(advance(make_run(owner), RunStatus.RUNNING), "worker-2")
    with pytest.raises(LeaseLost), locked_run(run.pk, "worker-1") as w:
        w.transition(RunStatus.VERIFYING)
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING


@pytest.mark.django_db
def test_the_worker_holding_the_lease_commits(owner):
    run = held(advance(make_run(owner), RunStatus.RUNNING), "worker-1")
    with locked_run(run.pk, "worker-1") as w:
        w.transition(RunStatus.VERIFYING)
    run.refresh_from_db()
    assert run.status == RunStatus.VERIFYING


@pytest.mark.django_db
def test_a_run_parked_without_a_recorded_time_resumes_adding_no_parked_time(owner):
    """Rows parked before parked_at was recorded: nothing to count, and nothing to fail on."""
    run = parked(make_run(owner), RunStatus.PAUSED, ago=0, parked_seconds=5)
    Run.objects.filter(pk=run.pk).update(parked_at=None)
    with locked_run(run.pk) as w:
        w.transition(RunStatus.RUNNING)
    run.refresh_from_db()
    assert (run.status, run.parked_seconds) == (RunStatus.RUNNING, 5)


@pytest.mark.django_db
def test_a_run_about_to_park_counts_no_parked_time_yet(owner):
    run = advance(make_run(owner), RunStatus.RUNNING)
    with locked_run(run.pk) as w:
        w.set(parked_at=timezone.now() - timedelta(seconds=30))
        w.transition(RunStatus.WAITING_APPROVAL)
    run.refresh_from_db()
    assert run.parked_seconds == 0
    assert timezone.now() - run.parked_at < timedelta(seconds=30)


@pytest.mark.django_db
def test_a_fenced_commit_moves_the_run_on_with_its_event_and_keeps_the_lease(owner):
    run = held(advance(make_run(owner), RunStatus.RUNNING), "worker-1")
    with fenced_run(run, "worker-1") as w:
        w.transition(RunStatus.VERIFYING)
    fresh = Run.objects.get(pk=run.pk)
    assert (fresh.status, fresh.lease_owner) == (RunStatus.VERIFYING, "worker-1")
    last = RunEvent.objects.filter(run=run).order_by("-seq").first()
    assert (last.seq, last.type, last.payload) == (
        fresh.event_seq,
        EventType.RUN_STATUS,
        {"status": RunStatus.VERIFYING},
    )


@pytest.mark.django_db
def test_a_fenced_commit_whose_status_changed_underneath_writes_nothing(owner):
    """Nobody changes a leased run's status; should someone, the fence holds on it too."""
    run = held(advance(make_run(owner), RunStatus.RUNNING), "worker-1")
    Run.objects.filter(pk=run.pk).update(status=RunStatus.PAUSED)
    events = RunEvent.objects.filter(run=run).count()
    with pytest.raises(LeaseLost), fenced_run(run, "worker-1") as w:
        w.set(final_response="mine")
        w.transition(RunStatus.VERIFYING)
    fresh = Run.objects.get(pk=run.pk)
    assert (fresh.status, fresh.final_response) == (RunStatus.PAUSED, "")
    assert RunEvent.objects.filter(run=run).count() == events


@pytest.mark.django_db
@pytest.mark.parametrize("status", [RunStatus.PAUSED, RunStatus.SUCCEEDED])
def test_a_fenced_commit_neither_parks_nor_ends_a_run(owner, status):
    run = held(advance(make_run(owner), RunStatus.RUNNING), "worker-1")
    with pytest.raises(InvalidTransition), fenced_run(run, "worker-1") as w:
        w.transition(status)
    assert Run.objects.get(pk=run.pk).status == RunStatus.RUNNING


@pytest.mark.django_db
def test_a_new_tasks_run_is_its_first_attempt_with_its_queued_event_first(owner):
    task = Task.objects.create(owner=owner, text="Do the thing")
    run = run_create(task=task, first=True)
    again = run_create(task=task)
    assert (run.attempt, again.attempt) == (1, 2)
    for each in (run, again):
        each.refresh_from_db()
        events = list(RunEvent.objects.filter(run=each).values_list("seq", "type"))
        assert (each.event_seq, events) == (1, [(1, EventType.RUN_QUEUED)])


def taken_over_while_verifying(owner) -> tuple[Run, Lease]:
    """A run being verified by a first worker, as that worker holds it in memory, and the
    first worker's lease, expired (a stalled process) and not yet taken over."""
    run = advance(make_run(owner), RunStatus.VERIFYING)
    first = Lease.claim(run.pk, 30)
    stale = Run.objects.select_related("task").get(pk=run.pk)
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    return stale, first


def commit_a_verdict(stale: Run, lease: Lease) -> None:
    """The first worker's verdict: a non-fenced commit through its copy of the run."""
    with locked_run(stale.pk, lease.token, run=stale) as w:
        w.set(final_response="the first worker's verdict")
        finish(w, RunStatus.SUCCEEDED)


@pytest.mark.django_db
def test_a_worker_whose_lease_was_taken_over_commits_no_verdict_from_its_stale_copy(owner):
    stale, first = taken_over_while_verifying(owner)
    second = Lease.claim(stale.pk, 30)
    events = RunEvent.objects.filter(run=stale).count()

    with pytest.raises(LeaseLost):
        commit_a_verdict(stale, first)

    fresh = Run.objects.get(pk=stale.pk)
    assert (fresh.status, fresh.lease_owner, fresh.final_response) == (
        RunStatus.VERIFYING,
        second.token,
        "",
    )
    assert RunEvent.objects.filter(run=stale).count() == events


def waits_for_a_lock(pid: int | None) -> bool:
    """Whether the PostgreSQL backend `pid` waits for a lock another transaction holds."""
    if pid is None:
        return False
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = %s AND NOT granted)", [pid]
        )
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    "postgresql" not in settings.DATABASES["default"]["ENGINE"],
    reason="SQLite serialises writers from BEGIN (IMMEDIATE), so no commit reads the row "
    "while a takeover is uncommitted; on PostgreSQL only the row lock makes it wait",
)
def test_a_stale_worker_committing_during_a_takeover_waits_for_its_row_lock_and_commits_nothing(
    owner,
):
    stale, first = taken_over_while_verifying(owner)
    events = RunEvent.objects.filter(run=stale).count()
    seen: dict = {}

    def first_worker():
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                seen["pid"] = cursor.fetchone()[0]
            commit_a_verdict(stale, first)
            seen["outcome"] = "committed"
        except LeaseLost:
            seen["outcome"] = "refused"
        finally:
            connection.close()

    worker = threading.Thread(target=first_worker)
    with transaction.atomic():
        # The takeover: its UPDATE holds the run's row until it commits.
        second = Lease.claim(stale.pk, 30)
        worker.start()
        wait_for(
            lambda: waits_for_a_lock(seen.get("pid")),
            timeout=10,
            message="the first worker to wait for the run's row",
        )
    worker.join(timeout=10)

    assert seen.get("outcome") == "refused"
    fresh = Run.objects.get(pk=stale.pk)
    assert (fresh.status, fresh.lease_owner, fresh.final_response) == (
        RunStatus.VERIFYING,
        second.token,
        "",
    )
    assert RunEvent.objects.filter(run=stale).count() == events


# A token whose shape gives it away (core.secrecy.KNOWN_TOKENS).
LEAKED = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"


@pytest.mark.django_db
def test_text_from_outside_is_redacted_as_it_is_set(owner):
    """What a model server or a tool said may carry a secret: the run's text fields never
    store it."""
    run = make_run(owner)
    with locked_run(run.pk) as w:
        w.set(
            error_message=f"401: token {LEAKED} refused",
            final_response=f"Use {LEAKED} to push.",
            replan_reason=f"{LEAKED} expired",
            error_code="AUTH",
        )
    run.refresh_from_db()
    assert (run.error_message, run.final_response, run.replan_reason, run.error_code) == (
        "401: token [redacted] refused",
        "Use [redacted] to push.",
        "[redacted] expired",
        "AUTH",
    )


@pytest.mark.django_db
def test_a_status_change_is_told_to_the_runs_kind(owner, monkeypatch):
    """Its recipe's on_transition hears each change (a child's tells its parent)."""
    run = make_run(owner)
    heard = []
    monkeypatch.setattr(
        type(recipe_for(run.kind)),
        "on_transition",
        lambda recipe, w, before, after: heard.append((w.run.pk, before, after)),
    )
    with locked_run(run.pk) as w:
        w.transition(RunStatus.PLANNING)
    assert heard == [(run.pk, RunStatus.QUEUED, RunStatus.PLANNING)]


@pytest.mark.django_db
@pytest.mark.parametrize("flag", ["cancel_requested", "pause_requested"])
def test_setting_a_control_flag_signals_the_worker_watching_the_run(owner, monkeypatch, flag):
    """The worker holding the run watches for a signal (core.watch), not the row: a flag set
    without one would be noticed only at its next commit."""
    run = make_run(owner)
    signalled = []
    monkeypatch.setattr(writer_module, "signal_run", signalled.append)
    with locked_run(run.pk) as w:
        w.set(prompt_tokens=3)
    assert signalled == []
    with locked_run(run.pk) as w:
        w.set(**{flag: True})
    assert signalled == [run.pk]


@pytest.mark.django_db
def test_a_fenced_commit_reads_back_the_one_flag_a_person_set_meanwhile(owner):
    """The fence returns the flags as they are now: the worker obeys a cancel as a cancel and
    a pause as a pause, whichever was set since its last commit."""
    run = held(advance(make_run(owner), RunStatus.RUNNING), "worker-1")
    Run.objects.filter(pk=run.pk).update(pause_requested=True)
    with fenced_run(run, "worker-1") as w:
        w.set(prompt_tokens=5)
    assert (run.cancel_requested, run.pause_requested) == (False, True)
    Run.objects.filter(pk=run.pk).update(pause_requested=False, cancel_requested=True)
    with fenced_run(run, "worker-1") as w:
        w.set(prompt_tokens=6)
    assert (run.cancel_requested, run.pause_requested) == (True, False)


PROGRESS = {"current_step": 1, "total_steps": 2, "percent": 50, "status": "running"}


@pytest.mark.django_db
def test_a_head_nodes_events_are_published_to_its_tree(owner, monkeypatch):
    """A kind that delegates heads a tree of its own: its events go to the tree's feed too
    (tree_root_id its own id); a lone run's to no tree."""
    published = []
    monkeypatch.setattr(
        writer_module,
        "publish_events",
        lambda run, events, tree_root_id: published.append((run.pk, tree_root_id)),
    )
    head, lone = make_head(owner), make_run(owner)
    assert head.root_id is None and recipe_for(head.kind).delegates
    published.clear()
    for run in (head, lone):
        with TestCase.captureOnCommitCallbacks(execute=True), locked_run(run.pk) as w:
            w.event(EventType.PROGRESS_UPDATE, PROGRESS)
    assert published == [(head.pk, head.pk), (lone.pk, None)]


@pytest.mark.django_db
def test_a_fenced_commits_event_is_handed_back_numbered_by_the_fence(owner):
    run = held(advance(make_run(owner), RunStatus.RUNNING), "worker-1")
    with fenced_run(run, "worker-1") as w:
        event = w.event(EventType.PROGRESS_UPDATE, PROGRESS)
    assert event.seq == run.event_seq
    assert RunEvent.objects.get(run=run, seq=event.seq).type == EventType.PROGRESS_UPDATE


@pytest.mark.django_db
def test_only_a_new_runs_first_event_is_written_without_the_rows_lock(owner):
    """first_event skips the lock and the row's update: only right for the first event of a
    run nobody else can see yet (its event_seq 1); any later one would take a seq another
    writer may be taking too."""
    run = make_run(owner)
    with locked_run(run.pk) as w:
        w.transition(RunStatus.PLANNING)
    run.refresh_from_db()
    assert run.event_seq == 2
    with pytest.raises(AssertionError, match="first event only"):
        RunWriter(run).first_event(EventType.RUN_STATUS, {"status": RunStatus.PLANNING})
    assert RunEvent.objects.filter(run=run).count() == 2


@pytest.mark.django_db
def test_a_fenced_writer_flushed_mid_commit_writes_each_field_once(owner):
    """A recipe may flush mid-commit (a contract's log is written with the events so far):
    the commit's last flush is then the fence alone, not the first one's fields again."""
    run = held(advance(make_run(owner), RunStatus.RUNNING), "worker-1")
    with CaptureQueriesContext(connection) as queries, fenced_run(run, "worker-1") as w:
        w.set(prompt_tokens=5)
        w.flush()
    fences = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("UPDATE")]
    assert len(fences) == 2
    assert "prompt_tokens" in fences[0] and "prompt_tokens" not in fences[1]
    assert Run.objects.get(pk=run.pk).prompt_tokens == 5


@pytest.mark.django_db
def test_a_commit_whose_run_row_is_gone_fails_and_writes_nothing(owner):
    """The writer's one UPDATE of the run's row must change it: a row gone (deleted in the same
    transaction here; a staff delete elsewhere) fails the commit, as save() would."""
    run = make_run(owner)
    task_id = run.task_id
    with pytest.raises(DatabaseError, match="row is gone"), locked_run(run.pk) as w:
        Run.objects.filter(pk=run.pk).delete()
        w.set(final_response="never")
    assert Run.objects.filter(pk=run.pk, task_id=task_id).exists()  # rolled back
