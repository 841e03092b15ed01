"""Changing a run: the row lock, the lease check, the state change and its events, one transaction."""

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import partial
from typing import Any

from django.db import DEFAULT_DB_ALIAS, DatabaseError, IntegrityError, connections, transaction
from django.utils import timezone

from agents_app.core import rows
from agents_app.core.event_payloads import RunStatusPayload
from agents_app.core.events import EventType, publish_events
from agents_app.core.prepared import Prepared
from agents_app.core.secrecy import redact, redact_all
from agents_app.core.watch import signal_run
from agents_app.models import PARKED_STATUSES, TERMINAL_STATUSES, Run, RunEvent, RunStatus
from agents_app.runs.recipes import recipe_for

# The run's fields that may carry text from outside (a model server's, a tool's): redacted as
# they are set (core.secrecy), like every event's payload.
TEXT_FIELDS = frozenset({"error_message", "final_response", "replan_reason"})

# Fields a worker holding the run obeys between its commits: changing one signals it (core.watch).
CONTROL_FIELDS = frozenset({"cancel_requested", "pause_requested"})


class LeaseLost(Exception):
    """Another worker holds the run now; this one must stop without writing."""


class InvalidTransition(Exception):
    pass


class RunWriter:
    """Collects changes to one locked run and writes them, with their events, at the end."""

    def __init__(self, run: Run):
        self.run = run
        self._fields: set[str] = set()
        self._events: list[RunEvent] = []
        # step id -> what this commit appends to the step's Step.model_calls (worker.commits):
        # written with the step's own UPDATE when the commit writes the step, else on its own.
        self.step_calls: dict[int, bytes] = {}

    def set(self, **fields: Any) -> None:
        for name, value in fields.items():
            if name in TEXT_FIELDS:
                value = redact(value)
            setattr(self.run, name, value)
            self._fields.add(name)

    def event(self, type: EventType, payload: Mapping[str, Any] | None = None) -> RunEvent:
        """Add an event of `type`; `payload` is the type's TypedDict (core.event_payloads)."""
        self.run.event_seq += 1
        self._fields.add("event_seq")
        event = rows.new(
            RunEvent,
            run_id=self.run.pk,
            seq=self.run.event_seq,
            type=type,
            payload=redact_all(payload or {}),
        )
        self._events.append(event)
        return event

    def first_event(self, type: EventType, payload: Mapping[str, Any]) -> None:
        """The first event of a run this transaction created with `event_seq` 1, whose row
        nobody else can see yet: written without a lock or an update of the row."""
        assert self.run.event_seq == 1 and not self._events, "a new run's first event only"
        self._events.append(
            rows.new(RunEvent, run_id=self.run.pk, seq=1, type=type, payload=redact_all(payload))
        )
        self._write_events()

    def transition(self, status: str, **payload: Any) -> None:
        if not self.run.can_transition_to(status):
            raise InvalidTransition(f"run {self.run.pk}: {self.run.status} -> {status}")
        now = timezone.now()
        changes: dict[str, Any] = {"status": status}
        if status == RunStatus.PLANNING and self.run.started_at is None:
            changes["started_at"] = now
        if self.run.status in PARKED_STATUSES and self.run.parked_at is not None:
            waited = (now - self.run.parked_at).total_seconds()
            changes["parked_seconds"] = self.run.parked_seconds + max(0.0, waited)
            changes["parked_at"] = None
        if status in PARKED_STATUSES:
            # Parked, the run is nobody's: whatever unparks it queues it for any worker.
            changes.update(parked_at=now, lease_owner="", lease_expires_at=None)
        if status in TERMINAL_STATUSES:
            changes["finished_at"] = now
            changes["lease_owner"] = ""
            changes["lease_expires_at"] = None
        before = self.run.status
        self.set(**changes)
        self.event(EventType.RUN_STATUS, RunStatusPayload(status=status, **payload))
        # What its kind does when its status changes (a child tells its parent how it is):
        # its recipe, which lives in a package above this one (runs.recipes).
        recipe_for(self.run.kind).on_transition(self, before, status)

    def flush(self) -> None:
        if self._fields:
            # One UPDATE of the fields set, the short way (core.rows): save(update_fields=...)
            # builds it through the compiler at every commit.
            run, get_field = self.run, Run._meta.get_field
            changes = {name: getattr(run, get_field(name).attname) for name in sorted(self._fields)}
            if not rows.update(Run, run.pk, **changes):
                raise DatabaseError(f"run {run.pk}: its row is gone, nothing was written")
            if self._fields & CONTROL_FIELDS:
                signal_run(self.run.pk)
        self._write_events()
        self._fields.clear()

    def _write_events(self) -> None:
        """Insert the events collected, to be published once the transaction commits."""
        if self._events:
            rows.insert(self._events)
            run = self.run
            # A run of a tree (a child, or a head node: a kind that delegates) tells its tree.
            root_id = run.root_id or (run.pk if recipe_for(run.kind).delegates else None)
            transaction.on_commit(
                partial(publish_events, run, list(self._events), tree_root_id=root_id)
            )
        self._events.clear()


@contextmanager
def locked_run(
    run_id: int, lease_token: str | None = None, *, run: Run | None = None
) -> Iterator[RunWriter]:
    """Lock the run row for one transaction. With `lease_token`, raise LeaseLost unless this
    worker still holds the lease, so a worker that lost its lease can never commit a step.
    With `run`, that object is read again under the lock and written through (a worker keeps
    its run in memory between commits, with what it holds of it, e.g. the task, untouched)."""
    with transaction.atomic():
        if run is None:
            run = _RUN_LOCKED.get(run_id)
        else:
            read_again(run, lock=True)
        if lease_token is not None and run.lease_owner != lease_token:
            raise LeaseLost(f"run {run_id} is leased by another worker")
        writer = RunWriter(run)
        yield writer
        writer.flush()


# A run's row by its id, read at every commit of a worker's: compiled once (core.prepared).
_RUN = Prepared(lambda pk: Run.objects.filter(pk=pk), samples=(-1,))
_RUN_LOCKED = Prepared(lambda pk: Run.objects.select_for_update().filter(pk=pk), samples=(-1,))


def read_again(run: Run, *, lock: bool = False) -> None:
    """`run` as its row is now (read under a row lock with `lock`). Unlike refresh_from_db,
    which drops them, the related rows it holds (its task) are kept unless the row points
    elsewhere now."""
    row = (_RUN_LOCKED if lock else _RUN).get(run.pk)
    for field in Run._meta.concrete_fields:
        setattr(run, field.attname, getattr(row, field.attname))


class FencedWriter(RunWriter):
    """A worker's commit on its hot path (a tool call's row, a step's end): nothing is read
    before the writes. The fence is the last statement: one UPDATE of the run's row, only where
    this worker still holds the lease, that writes the fields set, advances `event_seq` by the
    events added and returns it with the flags a person may have changed since; no row means
    the lease is lost, and LeaseLost rolls every write of the transaction back. The events get
    their seqs from what it returns, so other writers' events (a cancel's) never collide.

    Only the lease holder writes what the hot path sets (tokens, tool calls made, the final
    response), so the worker's own values are the row's. The status too: nobody else changes
    it while the run is leased (a cancel or a pause sets a flag the holder obeys). So a fenced
    commit may move the run on (a step's end to verifying), never park or end it (that hands
    the run back); the fence then also checks that the status is still the one it left."""

    def __init__(self, run: Run, lease_token: str):
        super().__init__(run)
        self.lease_token = lease_token
        self.status_before: str | None = None

    def event(self, type: EventType, payload: Mapping[str, Any] | None = None) -> RunEvent:
        event = rows.new(
            RunEvent, run_id=self.run.pk, seq=0, type=type, payload=redact_all(payload or {})
        )
        self._events.append(event)
        return event

    def transition(self, status: str, **payload: Any) -> None:
        if status in PARKED_STATUSES or status in TERMINAL_STATUSES:
            raise InvalidTransition("a fenced commit neither parks nor ends a run: use locked_run")
        if self.status_before is None:
            self.status_before = self.run.status
        super().transition(status, **payload)

    def flush(self) -> None:
        run, count = self.run, len(self._events)
        names = tuple(sorted(self._fields - {"event_seq"}))
        # After a transition, the fence also holds the status it moved the run from.
        guarded = [] if self.status_before is None else [self.status_before]
        conn = connections[DEFAULT_DB_ALIAS]
        sql, fields = fence_statement(conn, names, bool(guarded))
        params: list[Any] = [count]
        for field, prepare in fields:
            value = getattr(run, field.attname)
            params.append(value if prepare is None else prepare(value, conn))
        with conn.cursor() as cursor:
            cursor.execute(sql, [*params, run.pk, self.lease_token, *guarded])
            row = cursor.fetchone()
        if row is None:
            raise LeaseLost(f"run {run.pk} is leased by another worker")
        run.event_seq, run.cancel_requested, run.pause_requested = (
            row[0],
            bool(row[1]),
            bool(row[2]),
        )
        for seq, event in enumerate(self._events, start=run.event_seq - count + 1):
            event.seq = seq
        self._write_events()
        self._fields.clear()


# The fence's UPDATE for each (database, fields written, status guarded): a run writes a few
# shapes, step after step.
_fences: dict[tuple[str, tuple[str, ...], bool], tuple[str, list[tuple[Any, Any]]]] = {}


def fence_statement(
    conn: Any, names: tuple[str, ...], guarded: bool
) -> tuple[str, list[tuple[Any, Any]]]:
    """FencedWriter's UPDATE setting the fields `names` (and advancing `event_seq` by its
    first parameter), with the fields in their parameters' order and how each is prepared
    (core.rows)."""
    key = (conn.vendor, names, guarded)
    shape = _fences.get(key)
    if shape is None:
        quote = conn.ops.quote_name
        fields = [Run._meta.get_field(name) for name in names]
        assignments = [f"{quote('event_seq')} = {quote('event_seq')} + %s"]
        assignments += [f"{quote(field.column)} = %s" for field in fields]
        guard = f" AND {quote('status')} = %s" if guarded else ""
        sql = (
            f"UPDATE {quote(Run._meta.db_table)} SET {', '.join(assignments)} "
            f"WHERE {quote('id')} = %s AND {quote('lease_owner')} = %s{guard} "
            f"RETURNING {quote('event_seq')}, {quote('cancel_requested')}, "
            f"{quote('pause_requested')}"
        )
        shape = _fences[key] = (sql, [(field, rows.preparer(field)) for field in fields])
    return shape


@contextmanager
def fenced_run(run: Run, lease_token: str) -> Iterator[FencedWriter]:
    """One commit on a worker's hot path (FencedWriter): the caller's writes, then the fence.
    On PostgreSQL its statements go as a pipeline: those whose results nothing reads (the
    rows written, the events) are sent without waiting for each answer; a read (the fence's
    RETURNING, an id) waits for everything before it."""
    try:
        with transaction.atomic(), _pipelined():
            writer = FencedWriter(run, lease_token)
            yield writer
            writer.flush()
    except IntegrityError:
        # The rows a worker numbers from its own view of the run (model exchanges, workspace
        # changes) collide with those of a worker that took the run over while this one was
        # frozen: before the fence could say so, the lease was lost.
        if Run.objects.filter(pk=run.pk, lease_owner=lease_token).exists():
            raise
        raise LeaseLost(f"run {run.pk} is leased by another worker") from None


def _pipelined() -> AbstractContextManager[Any]:
    """On PostgreSQL, psycopg's pipeline mode on this thread's connection (open: the caller's
    transaction began); elsewhere nothing."""
    conn = connections[DEFAULT_DB_ALIAS]
    return conn.connection.pipeline() if conn.vendor == "postgresql" else nullcontext()
