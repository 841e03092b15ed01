"""A worker's claim on one run: at most one worker executes a run; an expired claim is taken over.

A worker process holds many leases at once (one per run it executes, up to its concurrency).
One thread per process renews them all (`Renewer`): each tick renews every lease that is due
within the next tick in one UPDATE, so a hundred runs cost a hundred-th of the statements and
one database connection, not a thread and a connection each. A lease is renewed at a third of
its term, so a renewal that fails (a database blip, a lock held too long) is followed by
another before the lease expires.
"""

import logging
import os
import threading
import time
import uuid
from datetime import timedelta
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.utils import timezone

from agents_app.core import rows
from agents_app.models import TERMINAL_STATUSES, Run

logger = logging.getLogger(__name__)


TERMINAL = sorted(TERMINAL_STATUSES)
_claims: dict[str, tuple[str, Any]] = {}


def _claim_statement(conn: Any) -> tuple[str, Any]:
    """The claim's UPDATE for this database, built once (the ORM's compiler costs more than
    the statement), and how its two times are prepared (core.rows)."""
    shape = _claims.get(conn.vendor)
    if shape is None:
        quote = conn.ops.quote_name
        owner, expires = quote("lease_owner"), quote("lease_expires_at")
        sql = (
            f"UPDATE {quote(Run._meta.db_table)} SET {owner} = %s, {expires} = %s "
            f"WHERE {quote('id')} = %s AND {quote('status')} NOT IN "
            f"({', '.join('%s' for _ in TERMINAL)}) AND ({expires} IS NULL OR {expires} <= %s)"
        )
        shape = _claims[conn.vendor] = (
            sql,
            rows.preparer(Run._meta.get_field("lease_expires_at")),
        )
    return shape


class Lease:
    """A claim on one run, renewed by its process's `Renewer` while the worker works."""

    def __init__(self, run_id: int, token: str, seconds: float):
        self.run_id = run_id
        self.token = token
        self.seconds = seconds
        self.lost = threading.Event()
        # When its renewal is next due (time.monotonic()).
        self.due = time.monotonic() + seconds / 3

    @classmethod
    def claim(cls, run_id: int, seconds: float) -> "Lease | None":
        """Claim the run unless a live lease is held: one conditional UPDATE, no race."""
        token = uuid.uuid4().hex
        now = timezone.now()
        conn = connections[DEFAULT_DB_ALIAS]
        sql, prepare = _claim_statement(conn)
        expires = now + timedelta(seconds=seconds)
        with conn.cursor() as cursor:
            cursor.execute(
                sql, [token, prepare(expires, conn), run_id, *TERMINAL, prepare(now, conn)]
            )
            claimed = cursor.rowcount
        return cls(run_id, token, seconds) if claimed == 1 else None

    def start(self) -> None:
        """Keep it renewed until `release`."""
        self.due = time.monotonic() + self.seconds / 3
        RENEWER.add(self)

    def release(self, *, handed_back: bool = False) -> None:
        """Stop renewing and give the run up; `handed_back`: a commit of this worker already
        did (the run ended or parked), so there is nothing to write."""
        RENEWER.remove(self)
        if handed_back:
            return
        Run.objects.filter(pk=self.run_id, lease_owner=self.token).update(
            lease_owner="", lease_expires_at=None
        )


class Renewer:
    """The one thread of a process that renews its leases. Started with the first lease (after
    any fork: a thread does not survive one); it closes its database connection whenever it
    holds no lease, so an idle worker holds none."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._leases: dict[str, Lease] = {}
        self._wake = threading.Event()
        self._pid = 0
        self._thread: threading.Thread | None = None
        self.ticks = 0  # renewal statements sent, for tests and benchmarks

    def add(self, lease: Lease) -> None:
        with self._lock:
            self._leases[lease.token] = lease
            if self._pid != os.getpid() or self._thread is None or not self._thread.is_alive():
                self._pid = os.getpid()
                self._wake = threading.Event()
                self._thread = threading.Thread(target=self._run, name="lease-renewer", daemon=True)
                self._thread.start()
        self._wake.set()

    def remove(self, lease: Lease) -> None:
        with self._lock:
            self._leases.pop(lease.token, None)

    def held(self) -> int:
        with self._lock:
            return len(self._leases)

    def _run(self) -> None:
        while True:
            with self._lock:
                leases = list(self._leases.values())
            if not leases:
                connection.close()  # nothing to renew: hold no connection meanwhile
                self._wake.wait()
                self._wake.clear()
                continue
            now = time.monotonic()
            # Due now or before the next look: renewed together, in one statement per term.
            soonest = min(lease.due for lease in leases)
            if soonest > now:
                self._wake.wait(soonest - now)
                self._wake.clear()
                continue
            horizon = now + min(lease.seconds for lease in leases) / 6
            due = [lease for lease in leases if lease.due <= horizon]
            for seconds in sorted({lease.seconds for lease in due}):
                self._renew([lease for lease in due if lease.seconds == seconds], seconds)

    def _renew(self, leases: list[Lease], seconds: float) -> None:
        started = time.monotonic()
        for lease in leases:
            lease.due = started + seconds / 3
        tokens = [lease.token for lease in leases]
        try:
            renewed = Run.objects.filter(lease_owner__in=tokens).update(
                lease_expires_at=timezone.now() + timedelta(seconds=seconds)
            )
            self.ticks += 1
            if renewed == len(tokens):
                return
            # Some were taken over (or released meanwhile): which ones, in one more read.
            held = set(
                Run.objects.filter(lease_owner__in=tokens).values_list("lease_owner", flat=True)
            )
        except Exception:  # a blip; the next tick tries again before the lease expires
            logger.warning(
                "lease renewal of run(s) %s failed",
                ", ".join(str(lease.run_id) for lease in leases),
                exc_info=True,
            )
            connection.close_if_unusable_or_obsolete()
            return
        for lease in leases:
            if lease.token not in held:
                # Having lost the run, the renewal stops: it never writes the run again.
                self.remove(lease)
                lease.lost.set()


RENEWER = Renewer()
