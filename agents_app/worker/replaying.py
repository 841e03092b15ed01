"""A replay executed in this process to its end (runs_replay, the tests): delivery after
delivery of its tree through worker.execution.execute_run, each approval it parks at decided
as recorded (worker.replay), a run of its tree another worker holds waited for.

Here, not in worker.replay, because it delivers runs through worker.execution, which imports
worker.replay (a replay's provider and registry): imports point down."""

import time

from django.db.models import Q
from django.utils import timezone

from agents_app.models import TERMINAL_STATUSES, Run, RunStatus
from agents_app.worker.execution import execute_run
from tools_app.registry import ToolRegistry

# The most rounds execute_replay makes of a replay's tree (each round delivers every run of it
# that can go on: the head node, its children, a run decided at an approval).
REPLAY_ROUNDS = 100
# What a run of a replay's tree waits for when nothing of it can go on here: a person, a pause.
REPLAY_STUCK = frozenset({RunStatus.WAITING_APPROVAL, RunStatus.PAUSED})
# How long execute_replay waits for a run of its tree another worker holds (a Celery worker
# took a child, or a run an approval's decision queued again), and how often it looks.
REPLAY_BUSY_SECONDS = 600.0
REPLAY_POLL_SECONDS = 0.2


def _pause(seconds: float) -> None:
    time.sleep(seconds)


def _let_go(run_id: int, deadline: float) -> bool:
    """Wait until no other worker holds run `run_id` (its lease released or expired, or the
    run ended), looking every REPLAY_POLL_SECONDS; False when `deadline` came first."""
    while True:
        row = (
            Run.objects.filter(pk=run_id)
            .values_list("status", "lease_owner", "lease_expires_at")
            .first()
        )
        if row is None or row[0] in TERMINAL_STATUSES or not row[1]:
            return True
        if row[2] is None or row[2] <= timezone.now():
            return True
        if time.monotonic() >= deadline:
            return False
        _pause(REPLAY_POLL_SECONDS)


def execute_replay(run_id: int, *, registry: ToolRegistry | None = None) -> Run:
    """Execute a replay in this process until it ends, delivery after delivery: each approval
    it parks at is decided as recorded, and it goes on; a team's children (replays of its
    source's children) are executed here too. A run of its tree another worker holds (a
    Celery worker took a child it queued) is waited for, up to REPLAY_BUSY_SECONDS, and that
    wait is not a round. Stops early when nothing of its tree can go on (a person or a pause
    is waited for). Returns the run as it is then."""
    rounds = 0
    while rounds < REPLAY_ROUNDS:
        run = Run.objects.get(pk=run_id)
        if run.is_terminal:
            return run
        tree = Run.objects.filter(Q(pk=run_id) | Q(root_id=run_id))
        ready = list(
            tree.exclude(status__in=(*TERMINAL_STATUSES, *REPLAY_STUCK))
            .exclude(status=RunStatus.WAITING_CHILDREN)
            .order_by("-depth", "pk")
            .values_list("pk", flat=True)
        )
        if not ready:
            return run
        busy = [pk for pk in ready if execute_run(pk, registry=registry).state == "busy"]
        if len(busy) < len(ready):
            rounds += 1
        deadline = time.monotonic() + REPLAY_BUSY_SECONDS
        if not all(_let_go(pk, deadline) for pk in busy):
            return Run.objects.get(pk=run_id)
    return Run.objects.get(pk=run_id)
