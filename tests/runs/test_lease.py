"""The lease: at most one worker executes a run, an expired claim is taken over, a held one is
renewed in time, and a worker learns when another took the run from it."""

import logging
import os
import subprocess
import sys
import threading
import time
import types
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import OperationalError, connection, connections, transaction
from django.db.backends.signals import connection_created
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agents_app.models import Run, RunStatus
from agents_app.runs import lease as lease_module
from agents_app.runs.lease import RENEWER, Lease, Renewer
from tests.support.runs import end, make_run
from tests.support.waiting import wait_for
from tests.support.worker import worker_environment

pytestmark = pytest.mark.dialect


def renewer_threads() -> int:
    return sum(thread.name == "lease-renewer" for thread in threading.enumerate())


def lease_of(run_id: int) -> tuple[str, object]:
    row = Run.objects.values_list("lease_owner", "lease_expires_at").get(pk=run_id)
    return row[0], row[1]


@pytest.mark.django_db
def test_a_free_run_is_claimed_for_the_lease_term(owner):
    run = make_run(owner)
    before = timezone.now()
    lease = Lease.claim(run.pk, 30)
    owner_token, expires = lease_of(run.pk)
    assert lease is not None and owner_token == lease.token
    assert before + timedelta(seconds=30) <= expires <= timezone.now() + timedelta(seconds=30)


@pytest.mark.django_db
def test_a_run_whose_lease_is_held_cannot_be_claimed(owner):
    run = make_run(owner)
    first = Lease.claim(run.pk, 30)
    assert Lease.claim(run.pk, 30) is None
    assert lease_of(run.pk)[0] == first.token


@pytest.mark.django_db
def test_an_expired_lease_is_taken_over(owner):
    run = make_run(owner)
    Lease.claim(run.pk, 30)
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    second = Lease.claim(run.pk, 30)
    assert second is not None and lease_of(run.pk)[0] == second.token


@pytest.mark.django_db
def test_a_lease_that_expires_at_this_very_instant_is_taken_over(owner, monkeypatch):
    run = make_run(owner)
    instant = timezone.now()
    Run.objects.filter(pk=run.pk).update(lease_owner="gone", lease_expires_at=instant)
    # The clock pinned to the instant of expiry: the claim's `now` is exactly the row's expiry.
    monkeypatch.setattr(timezone, "now", lambda: instant)
    assert Lease.claim(run.pk, 30) is not None


@pytest.mark.django_db
def test_a_finished_run_is_never_claimed(owner):
    run = end(make_run(owner), RunStatus.CANCELLED)
    assert Lease.claim(run.pk, 30) is None
    assert lease_of(run.pk) == ("", None)


@pytest.mark.django_db
def test_a_released_run_is_free_for_the_next_worker(owner):
    run = make_run(owner)
    Lease.claim(run.pk, 30).release()
    assert lease_of(run.pk) == ("", None)
    assert Lease.claim(run.pk, 30) is not None


@pytest.mark.django_db
def test_releasing_a_lease_another_worker_took_over_leaves_theirs_alone(owner):
    run = make_run(owner)
    mine = Lease.claim(run.pk, 30)
    Run.objects.filter(pk=run.pk).update(lease_owner="theirs")
    mine.release()
    assert lease_of(run.pk)[0] == "theirs"


@pytest.mark.django_db(transaction=True)
def test_a_held_lease_is_renewed_within_a_third_of_its_term(owner):
    """Renewed at a third of its term, a lease survives a failed renewal (a database blip):
    the next one still comes before it expires."""
    run = make_run(owner)
    term = 4.5
    lease = Lease.claim(run.pk, term)
    _, claimed_until = lease_of(run.pk)
    lease.start()
    try:
        renewed_until = wait_for(
            lambda: (e := lease_of(run.pk)[1]) != claimed_until and e,
            timeout=term,
            interval=0.05,
            message="the lease to be renewed",
        )
    finally:
        lease.release()
    # Each renewal sets the expiry to its own time plus the term.
    assert timedelta(0) < renewed_until - claimed_until < timedelta(seconds=term / 2)
    assert not lease.lost.is_set()


@pytest.mark.django_db(transaction=True)
def test_a_worker_learns_that_another_took_its_run_over(owner):
    run = make_run(owner)
    lease = Lease.claim(run.pk, 0.6)
    lease.start()
    Run.objects.filter(pk=run.pk).update(lease_owner="another worker")
    try:
        assert lease.lost.wait(timeout=10)
        # Having lost the run, the renewal stops: it never writes the run again.
        assert lease.token not in RENEWER._leases
    finally:
        lease.release()
    assert lease_of(run.pk)[0] == "another worker"


@pytest.mark.django_db(transaction=True)
def test_one_thread_renews_every_lease_of_a_process_in_one_statement_a_tick(owner, monkeypatch):
    """A worker holds a lease per run it executes: one renewal thread and one statement a
    tick for all of them, not a thread and a connection each; with none left to renew, its
    connection is closed."""
    renewer = Renewer()  # this test's own, so that its first connection is seen
    monkeypatch.setattr(lease_module, "RENEWER", renewer)
    opened = []

    def remember(sender, connection, **kwargs):
        if threading.current_thread().name == "lease-renewer":
            opened.append(connection)

    runs = [make_run(owner) for _ in range(20)]
    leases = [Lease.claim(run.pk, 0.9) for run in runs]
    claimed = {run.pk: lease_of(run.pk)[1] for run in runs}
    connection_created.connect(remember)
    try:
        renewers_before = renewer_threads()
        for lease in leases:
            lease.start()
        wait_for(
            lambda: all(lease_of(run.pk)[1] != claimed[run.pk] for run in runs),
            timeout=10,
            interval=0.05,
            message="every lease to be renewed",
        )
        renewals = renewer.ticks
        renewers = renewer_threads() - renewers_before
        for lease in leases:
            lease.release()
        wait_for(
            lambda: opened and all(c.connection is None for c in opened),
            timeout=10,
            message="the renewer to close its connection",
        )
    finally:
        connection_created.disconnect(remember)
        for lease in leases:
            lease.release()
    assert renewers == 1 and renewer.held() == 0
    # Claimed within a moment of each other, they are renewed together (a second tick may
    # have begun meanwhile).
    assert 1 <= renewals <= 2, renewals
    assert not any(lease.lost.is_set() for lease in leases)


@pytest.mark.django_db(transaction=True)
def test_no_lease_lapses_while_the_runs_of_its_process_keep_the_processor_busy(owner):
    """Renewal must not starve: 40 leases of 3 s (renewed every second) held for 4 s while 6
    threads of the same process spin on the processor and 4 more write to the database in
    short transactions, back to back, as busy runs do. At no sample has any lease expired."""
    runs = [make_run(owner) for _ in range(40)]
    leases = [Lease.claim(run.pk, 3) for run in runs]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            sum(range(10_000))

    def write():
        try:
            while not stop.is_set():
                with transaction.atomic():
                    Run.objects.filter(pk=runs[0].pk).update(prompt_tokens=1)
        finally:
            connection.close()

    busy = [threading.Thread(target=spin) for _ in range(6)]
    busy += [threading.Thread(target=write) for _ in range(4)]
    ids = [run.pk for run in runs]
    lapsed = []
    for lease in leases:
        lease.start()
    for thread in busy:
        thread.start()
    try:
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            now = timezone.now()
            expiries = Run.objects.filter(pk__in=ids).values_list("lease_expires_at", flat=True)
            lapsed += [expiry for expiry in expiries if expiry <= now]
            stop.wait(0.05)
    finally:
        stop.set()
        for thread in busy:
            thread.join()
        for lease in leases:
            lease.release()
    assert lapsed == []
    assert not any(lease.lost.is_set() for lease in leases)


@pytest.fixture
def short_lock_waits():
    """Connections opened from now on give up on a lock after 0.1 s instead of waiting."""
    options = connections.settings["default"].setdefault("OPTIONS", {})
    saved = dict(options)
    if connection.vendor == "sqlite":
        options["timeout"] = 0.1
    else:
        options["options"] = "-c lock_timeout=100"
    yield
    options.clear()
    options.update(saved)


@pytest.mark.django_db(transaction=True)
def test_a_lease_survives_a_renewal_that_fails_and_renews_at_the_next_tick(
    owner, caplog, short_lock_waits, monkeypatch
):
    # A renewer of this test's own: its connection is opened after the short lock waits.
    monkeypatch.setattr(lease_module, "RENEWER", Renewer())
    run = make_run(owner)
    lease = Lease.claim(run.pk, 1.5)  # renewed every 0.5 s
    lease.start()
    try:
        with caplog.at_level(logging.WARNING, logger="agents_app.runs.lease"):
            # A blip: the run's row is locked longer than the renewal will wait.
            with transaction.atomic():
                Run.objects.select_for_update().get(pk=run.pk)
                wait_for(
                    lambda: any("renewal" in r.getMessage() for r in caplog.records),
                    timeout=10,
                    message="a renewal to fail",
                )
            _, blip_until = lease_of(run.pk)
            wait_for(
                lambda: lease_of(run.pk)[1] > blip_until,
                timeout=10,
                message="the next renewal",
            )
        assert not lease.lost.is_set()
        assert lease_of(run.pk)[0] == lease.token
        # The operator's log says what went wrong, not only that something did.
        failure = next(r for r in caplog.records if "renewal" in r.getMessage())
        assert failure.exc_info  # the exception itself, not False or None
    finally:
        lease.release()


HOLD_A_LEASE_AND_EXIT = """
import django, sys
django.setup()
from agents_app.runs import lease as lease_module
from agents_app.runs.lease import RENEWER, Lease, Renewer
Lease.claim(int(sys.argv[1]), 0.3).start()
print("claimed", flush=True)
"""


@pytest.mark.django_db(transaction=True)
def test_a_held_lease_never_keeps_a_worker_process_from_exiting(owner):
    """A worker that ends (shutdown, a crash past the task's `finally`) must not hang on its
    renewal thread; the lease then expires and another worker takes over."""
    run = make_run(owner)
    env = worker_environment(DJANGO_SETTINGS_MODULE="config.settings")
    exited = subprocess.run(
        [sys.executable, "-c", HOLD_A_LEASE_AND_EXIT, str(run.pk)],
        env=env,
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=45,
    )
    assert (exited.returncode, exited.stdout.strip()) == (0, "claimed"), exited.stderr
    assert lease_of(run.pk)[0] != ""


# The renewer's loop driven step by step: its clock, its wake-up event, its thread and its
# connection replaced by fakes, `_run` called in the test's own thread. Time moves only when
# the renewer waits, by exactly what it asked for, so each renewal's instant is exact; a loop
# that looks again without waiting (a busy loop, which would burn a core) is caught at once.


class Asleep(Exception):
    """The renewer waits with no timeout and nothing will wake it: it is idle."""


class Horizon(Exception):
    """The renewer asked to wait past the test's end."""


class BusyLoop(Exception):
    """The renewer looked again and again without waiting."""


class FakeClock:
    def __init__(self, now: float = 100.0):
        self.now = now
        self.looks = 0  # reads since time last moved

    def monotonic(self) -> float:
        self.looks += 1
        if self.looks > 50:
            raise BusyLoop("the clock read 50 times without a wait")
        return self.now

    def advance(self, seconds: float) -> None:
        if seconds > 0:
            self.now += seconds
            self.looks = 0


class FakeWake:
    def __init__(self, clock: FakeClock, until: float):
        self.clock, self.until = clock, until
        self.flag = False
        self.waits: list[float | None] = []
        self.immediate = 0  # waits that returned at once, since the last clear
        self.clears = 0  # clears since the last wait

    def set(self) -> None:
        self.flag = True

    def clear(self) -> None:
        self.flag = False
        self.immediate = 0
        self.clears += 1
        if self.clears > 3:
            raise BusyLoop("cleared again and again without a wait")

    def wait(self, timeout: float | None = None) -> bool:
        self.clears = 0
        self.waits.append(timeout)
        if self.flag:
            self.immediate += 1
            if self.immediate > 3:
                raise BusyLoop("a wait on an event that is never cleared")
            return True
        if timeout is None:
            raise Asleep
        if self.clock.now + timeout > self.until:
            raise Horizon
        self.clock.advance(timeout)
        return False


class FakeThread:
    def __init__(self, target, name, daemon):
        self.name, self.alive = name, False

    def start(self) -> None:
        self.alive = True

    def is_alive(self) -> bool:
        return self.alive


class FakeConnection:
    def __init__(self, ours):
        self.ours = ours
        self.closed = 0
        self.closed_if_unusable = 0

    def close(self) -> None:
        if not self.ours():
            return connection.close()
        self.closed += 1

    def close_if_unusable_or_obsolete(self) -> None:
        if not self.ours():
            return connection.close_if_unusable_or_obsolete()
        self.closed_if_unusable += 1


class Driven:
    """A renewer of its own, its loop run by `run_until`, every renewal logged as
    (instant, run ids, term)."""

    def __init__(self, monkeypatch, until: float = 1e9):
        # Only this test's thread sees the fakes: a renewer thread an earlier test left
        # behind (idle, its leases released) that wakes meanwhile sees the real ones.
        test_thread = threading.current_thread()
        self.ours = lambda: threading.current_thread() is test_thread
        self.clock = FakeClock()
        self.wake = FakeWake(self.clock, until)
        self.connection = FakeConnection(self.ours)
        self.threads: list[FakeThread] = []

        def thread(target, name, daemon):
            if not self.ours():
                return threading.Thread(target=target, name=name, daemon=daemon)
            self.threads.append(FakeThread(target, name, daemon))
            return self.threads[-1]

        fake_threading = types.SimpleNamespace(
            Thread=thread,
            Event=lambda: self.wake if self.ours() else threading.Event(),
            Lock=threading.Lock,
        )
        monkeypatch.setattr(lease_module, "time", types.SimpleNamespace(monotonic=self.monotonic))
        monkeypatch.setattr(lease_module, "threading", fake_threading)
        monkeypatch.setattr(lease_module, "connection", self.connection)
        self.renewer = Renewer()
        monkeypatch.setattr(lease_module, "RENEWER", self.renewer)
        self.renewals: list[tuple[float, list[int], float]] = []
        renew = self.renewer._renew

        def logged(leases, seconds):
            self.renewals.append((self.clock.now, sorted(one.run_id for one in leases), seconds))
            renew(leases, seconds)

        self.renewer._renew = logged

    def monotonic(self) -> float:
        return self.clock.monotonic() if self.ours() else time.monotonic()

    def run_until(self, until: float, ending=Horizon) -> None:
        self.wake.until = until
        with pytest.raises(ending):
            self.renewer._run()


def held_lease(owner, seconds: float) -> Lease:
    run = make_run(owner)
    lease = Lease.claim(run.pk, seconds)
    assert lease is not None
    lease.lost = threading.Event()  # a real one: the fake threading's Event is the renewer's
    return lease


@pytest.mark.django_db
def test_a_lease_is_renewed_at_each_third_of_its_term_from_its_start(owner, monkeypatch):
    """Claimed, then started half a second later: renewed a third of its term (1 s of 3) after
    its start, then every third, each at its instant exactly: neither earlier (a statement
    more for nothing) nor later (one failed renewal would let it expire)."""
    driven = Driven(monkeypatch)
    lease = held_lease(owner, 3.0)  # claimed at 100.0
    driven.clock.advance(0.5)
    lease.start()  # at 100.5
    _, claimed_until = lease_of(lease.run_id)
    driven.run_until(104.0)
    assert [instant for instant, _, _ in driven.renewals] == [101.5, 102.5, 103.5]
    assert driven.renewer.ticks == 3
    assert lease_of(lease.run_id)[1] > claimed_until
    assert lease.due == 104.5 and not lease.lost.is_set()


@pytest.mark.django_db
def test_leases_due_within_a_sixth_of_the_shortest_term_are_renewed_in_one_statement(
    owner, monkeypatch
):
    """Terms of 3 s: a lease due 0.5 s after the first (a sixth of the term, the bound
    included) is renewed with it (a statement fewer), one due 0.55 s after it at its own
    time; and with it the two renewed before, due again 0.45 s after it."""
    driven = Driven(monkeypatch)
    first, close, later = (held_lease(owner, 3.0) for _ in range(3))
    for lease in (first, close, later):
        lease.start()  # due at 101.0
    close.due, later.due = 101.5, 101.55
    driven.run_until(101.52)
    assert driven.renewals == [(101.0, sorted([first.run_id, close.run_id]), 3.0)]
    assert (first.due, close.due, later.due) == (102.0, 102.0, 101.55)
    assert driven.renewer.ticks == 1  # statements sent
    driven.run_until(101.9)
    assert driven.renewals[1:] == [
        (101.55, sorted([first.run_id, close.run_id, later.run_id]), 3.0)
    ]
    assert driven.renewer.ticks == 2


@pytest.mark.django_db
def test_leases_of_two_terms_due_together_take_one_statement_per_term(owner, monkeypatch):
    driven = Driven(monkeypatch)
    short, long_ = held_lease(owner, 3.0), held_lease(owner, 6.0)
    short.start()  # due at 101.0
    long_.start()
    long_.due = 101.2  # within 0.5 s (a sixth of the shortest term) of the other
    with CaptureQueriesContext(connection) as queries:
        driven.run_until(101.9)
    assert driven.renewals == [(101.0, [short.run_id], 3.0), (101.0, [long_.run_id], 6.0)]
    assert driven.renewer.ticks == 2
    assert sum(q["sql"].startswith("UPDATE") for q in queries.captured_queries) == 2
    assert (short.due, long_.due) == (102.0, 103.0)


@pytest.mark.django_db
def test_a_renewer_waiting_for_the_next_due_time_sleeps_until_then(owner, monkeypatch):
    """Between renewals the renewer waits, once, for exactly the time left, woken early by a
    lease added meanwhile (the event is set) and then waits again: it never looks in a busy
    loop (the fakes raise BusyLoop), which would burn a core of the worker."""
    driven = Driven(monkeypatch)
    lease = held_lease(owner, 3.0)
    lease.start()  # due at 101.0; the start set the event
    driven.run_until(102.5)
    assert driven.wake.waits == [1.0, 1.0, 1.0, 1.0]  # woken at once, then 1 s, 1 s, and past
    assert [instant for instant, _, _ in driven.renewals] == [101.0, 102.0]


@pytest.mark.django_db
def test_an_idle_renewer_closes_its_connection_and_sleeps_until_woken(owner, monkeypatch):
    """With no lease it waits with no timeout (an idle worker uses no processor) and holds no
    connection; a lease released before it looked leaves it woken once, then asleep."""
    driven = Driven(monkeypatch)
    lease = held_lease(owner, 3.0)
    lease.start()  # sets the event
    lease.release()
    driven.run_until(1e9, ending=Asleep)
    assert driven.wake.waits == [None, None]
    assert driven.connection.closed == 2
    assert driven.renewals == []


@pytest.mark.django_db
def test_a_renewal_finding_one_lease_taken_over_marks_that_one_lost_and_keeps_the_other(
    owner, monkeypatch
):
    driven = Driven(monkeypatch)
    mine, taken = held_lease(owner, 3.0), held_lease(owner, 3.0)
    mine.start()
    taken.start()
    Run.objects.filter(pk=taken.run_id).update(lease_owner="another worker")
    driven.run_until(102.5)
    assert taken.lost.is_set() and not mine.lost.is_set()
    assert driven.renewer.held() == 1 and mine.token in driven.renewer._leases
    # The lost one is never renewed again; the other goes on.
    assert driven.renewals == [
        (101.0, sorted([mine.run_id, taken.run_id]), 3.0),
        (102.0, [mine.run_id], 3.0),
    ]
    assert lease_of(taken.run_id)[0] == "another worker"


@pytest.mark.django_db
def test_a_failed_renewal_closes_an_unusable_connection_and_is_retried_a_third_later(
    owner, monkeypatch, caplog
):
    driven = Driven(monkeypatch)
    lease = held_lease(owner, 3.0)
    lease.start()
    _, claimed_until = lease_of(lease.run_id)
    failures = [OperationalError("server closed the connection unexpectedly")]

    def now():
        if failures:
            raise failures.pop()
        return timezone.now()

    monkeypatch.setattr(lease_module, "timezone", types.SimpleNamespace(now=now))
    with caplog.at_level(logging.WARNING, logger="agents_app.runs.lease"):
        driven.run_until(101.5)
    assert driven.connection.closed_if_unusable == 1  # a broken one is not used again
    assert lease_of(lease.run_id)[1] == claimed_until and not lease.lost.is_set()
    assert [r.exc_info[0] for r in caplog.records] == [OperationalError]
    driven.run_until(102.5)
    assert [instant for instant, _, _ in driven.renewals] == [101.0, 102.0]
    assert lease_of(lease.run_id)[1] > claimed_until
    assert driven.connection.closed_if_unusable == 1


@pytest.mark.django_db
def test_one_renewal_thread_a_process_and_a_new_one_after_a_fork(owner, monkeypatch):
    """A thread does not survive a fork: a child process (another pid) holding a lease the
    parent's renewer knows of starts its own thread; so does a process whose thread died."""
    driven = Driven(monkeypatch)
    first, second, third, fourth = (held_lease(owner, 3.0) for _ in range(4))
    first.start()
    second.start()
    assert len(driven.threads) == 1 and driven.threads[0].alive
    parent = os.getpid()
    monkeypatch.setattr(
        lease_module, "os", types.SimpleNamespace(getpid=lambda: parent + 1)
    )  # the forked child
    third.start()
    assert len(driven.threads) == 2 and driven.renewer._pid == parent + 1
    driven.threads[1].alive = False  # the thread died
    fourth.start()
    assert len(driven.threads) == 3 and driven.renewer.held() == 4
