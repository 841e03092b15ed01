"""Django's SQLite backend, with the writers of one process taking turns in order.

SQLite lets one writer at a time into a database file; one that finds it locked sleeps and
tries again (its busy handler: 1, 2, 5 ... 100 ms), so with many threads writing, whoever tries
at the right instant wins and a thread can lose for as long as the busy timeout. A worker runs
many runs in threads of one process (docs/ARCHITECTURE.md), and among them the lease renewer,
which must not lose for a third of a lease term. So the writers of one process queue for the
file first, first come first served (`WriteGate`): a transaction from its BEGIN to its COMMIT or
ROLLBACK, and a write outside a transaction for its one statement. SQLite's own lock still
decides between processes (the web process, another worker), on the busy timeout as before.
A writer that waits longer than the busy timeout fails as SQLite would: "database is locked".
"""

import os
import threading
from collections import deque

from django.db import OperationalError
from django.db.backends.sqlite3 import base

WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


class WriteGate:
    """One writer at a time, in the order they came; the next one is handed the turn."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held = False
        self._waiting: deque[threading.Event] = deque()

    def acquire(self, timeout: float) -> bool:
        with self._lock:
            if not self._held:
                self._held = True
                return True
            turn = threading.Event()
            self._waiting.append(turn)
        if turn.wait(timeout):
            return True
        with self._lock:
            if turn.is_set():  # handed the turn as the wait ended
                return True
            self._waiting.remove(turn)
            return False

    def release(self) -> None:
        with self._lock:
            if self._waiting:
                self._waiting.popleft().set()  # still held: now by the next one
            else:
                self._held = False


_gates: dict[tuple[int, str], WriteGate] = {}
_gates_lock = threading.Lock()


def gate_of(name: str) -> WriteGate:
    """This process's gate for the file `name` (a forked child gets its own: a turn held in
    the parent at the fork is no one's in the child)."""
    key = (os.getpid(), str(name))
    with _gates_lock:
        gate = _gates.get(key)
        if gate is None:
            gate = _gates[key] = WriteGate()
        return gate


class DatabaseWrapper(base.DatabaseWrapper):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.holds_turn = False

    @property
    def gate(self) -> WriteGate:
        return gate_of(self.settings_dict["NAME"])

    def wait_for_turn(self) -> None:
        timeout = float(self.settings_dict.get("OPTIONS", {}).get("timeout", 5))
        if not self.gate.acquire(timeout):
            raise OperationalError("database is locked")

    def give_turn_back(self) -> None:
        if self.holds_turn:
            self.holds_turn = False
            self.gate.release()

    def _start_transaction_under_autocommit(self):
        self.wait_for_turn()
        self.holds_turn = True
        try:
            super()._start_transaction_under_autocommit()
        except BaseException:
            self.give_turn_back()
            raise

    def _commit(self):
        try:
            return super()._commit()
        finally:
            if self.connection is None or not self.connection.in_transaction:
                self.give_turn_back()

    def _rollback(self):
        try:
            return super()._rollback()
        finally:
            if self.connection is None or not self.connection.in_transaction:
                self.give_turn_back()

    def _close(self):
        try:
            return super()._close()
        finally:
            self.give_turn_back()

    def create_cursor(self, name=None):
        cursor = self.connection.cursor(factory=CursorWrapper)
        cursor.wrapper = self
        return cursor


class CursorWrapper(base.SQLiteCursorWrapper):
    """A write outside a transaction takes its turn for its one statement."""

    wrapper: DatabaseWrapper

    def _write_alone(self, query: str) -> bool:
        return not self.connection.in_transaction and query.lstrip()[:7].upper().startswith(WRITES)

    def execute(self, query, params=None):
        if not self._write_alone(query):
            return super().execute(query, params)
        self.wrapper.wait_for_turn()
        try:
            return super().execute(query, params)
        finally:
            self.wrapper.gate.release()

    def executemany(self, query, param_list):
        if not self._write_alone(query):
            return super().executemany(query, param_list)
        self.wrapper.wait_for_turn()
        try:
            return super().executemany(query, param_list)
        finally:
            self.wrapper.gate.release()
