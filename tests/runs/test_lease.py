"""The lease: at most one worker executes a run, an expired claim is taken over, a held one is
renewed in time, and a worker learns when another took the run from it."""

import logging
import subprocess
import sys
import threading
import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection, connections, transaction
from django.db.backends.signals import connection_created
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
