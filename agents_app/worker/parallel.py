"""Steps side by side: a parallel plan's steps that need nothing unfinished run at once, each
in a thread of the one worker that holds the run's lease (engine.decide ActionKind.PARALLEL).

Each step is executed as any step is (RunExecutor.execute): its start, its tool calls' rows and
its end are commits of its own, fenced by the lease. The steps' commits take turns (`Branch.turn`,
one lock for the run): the run's row, kept in memory by the worker and read again or fenced at
every commit, is written by one commit at a time, so the events keep their gapless seq in the
order their commits happened. What a step's hooks hear waits in that step's own PendingWrites,
written with that step's next commit; each thread has its own database connection (Django's are
per thread), closed when its step ends.

When a step ends, the steps that depended on it start if they can. A step that needs a person
parks alone (approvals.parking.hold_on_call): its siblings go on, and the run parks, holding
nothing, only when no step can run and one still waits for a decision. A decision made while
its siblings run is seen at once (approvals.decisions signals the run): the step continues
where it stopped, or is skipped. Otherwise the decision queues the run again. A cancel (a
person's, or one decided at an approval), a pause or the kill switch lets no new step start;
the steps running stop at their own checkpoints (a cancel) or finish (a pause), then the next
decision ends or parks the run.

A step that calls for a micro agent, or finds the one it called for working still, ends its
thread there, its usage written; once no sibling runs, every micro agent asked for starts and
the run parks while any of them works (orchestration.micro_tool): parking earlier would hand
the lease back under the siblings' feet.
"""

import contextlib
import contextvars
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from django.db import DatabaseError, connections

from agents_app.approvals.parking import park_again
from agents_app.core.watch import Watch
from agents_app.engine.decide import ready_steps
from agents_app.engine.executor import AwaitChild
from agents_app.engine.hooks import StopRun
from agents_app.models import Approval, ApprovalStatus, Run, RunStatus, Step
from agents_app.orchestration.micro_tool import micro_spawn, micro_working
from agents_app.runs.control import engaged_switch
from agents_app.runs.lease import Lease
from agents_app.runs.recipes import RunRows
from agents_app.runs.writer import LeaseLost, RunWriter
from agents_app.worker.commits import PendingWrites, Turn, committing, read_control_flags
from agents_app.worker.hooks import POLL_SECONDS
from agents_app.worker.steps import board_of

if TYPE_CHECKING:
    from agents_app.worker.execution import RunExecutor

# At most this many steps of one run at once; the rest wait for one of them to end.
STEPS_AT_ONCE = 8


class Branch:
    """What the thread running one step has of its own: what its hooks heard since its last
    commit, its look at the run's flags, the micro agent it calls for (or waits for); and the
    turn to commit it shares with its siblings (worker.commits.Turn)."""

    def __init__(self, run_id: int, turn: Turn):
        self.pending = PendingWrites()
        self.watch = Watch(run_id)
        self.turn = turn
        # The step's call for a micro agent, started once its siblings ended; or (None) the
        # micro agent it called for earlier, working still.
        self.child: tuple[Step, AwaitChild | None] | None = None

    @contextmanager
    def commit(self, run: Run, lease: Lease, *, fenced: bool) -> Iterator[RunWriter]:
        with committing(run, lease, self.pending, fenced=fenced, turn=self.turn) as w:
            yield w


def run_side_by_side(executor: "RunExecutor", first: tuple[int, ...], rows: RunRows) -> None:
    """Run the steps `first` and every step that becomes ready as they end, until none can
    run; park the run if a step still waits for a person. Raises what a step raised (the
    lease lost first, then a stop, then the first other error) once every step ended."""
    _SideBySide(executor, rows).run(first)


class _SideBySide:
    def __init__(self, executor: "RunExecutor", rows: RunRows):
        self.executor = executor
        self.rows = rows
        self.turn = executor.turn
        # A decision on a held step, or a cancel, while the steps run: looked at when it moved.
        self.watch = Watch(executor.run_id)
        self.running: dict[Future[Any], int] = {}
        self.errors: list[BaseException] = []
        self.children: list[tuple[Step, AwaitChild | None]] = []

    def run(self, first: tuple[int, ...]) -> None:
        run = self.rows.run
        self.executor.specs(run)  # read once, before the threads share it
        with ThreadPoolExecutor(
            max_workers=STEPS_AT_ONCE, thread_name_prefix=f"run-{run.pk}-step"
        ) as pool:
            self.start(pool, self.can_start(first))
            while self.running:
                ended, _ = wait(self.running, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
                for future in ended:
                    del self.running[future]
                    error = future.exception()
                    if error is not None:
                        self.errors.append(error)
                if not ended and not self.watch.run_moved():
                    continue  # nothing ended, nobody decided: the steps run on
                if not self.errors and not self.stopping():
                    with self.turn:
                        board = board_of(self.rows.steps)
                        ready = ready_steps(board)
                    self.start(pool, self.can_start(ready))
        if self.errors:
            raise self.worst()
        if self.stopping():
            return
        if self.children:
            self.park_for_children()
            return
        self.park_if_waiting()

    def start(self, pool: ThreadPoolExecutor, indices: list[int]) -> None:
        for index in indices:
            # Each step's thread gets the worker's context (core.publisher's background flag).
            context = contextvars.copy_context()
            self.running[pool.submit(context.run, self.execute, index)] = index

    def can_start(self, ready: tuple[int, ...]) -> list[int]:
        """The ready steps not running here already, not waiting for a person's decision and
        not calling for a micro agent."""
        running = set(self.running.values()) | {step.index for step, _ in self.children}
        steps = [self.rows.steps[i] for i in ready if i not in running]
        waiting = set(
            Approval.objects.filter(
                run_id=self.rows.run.pk,
                status=ApprovalStatus.PENDING,
                step_id__in=[s.pk for s in held_steps(steps)],
            ).values_list("step_id", flat=True)
        )
        return [s.index for s in steps if s.pk not in waiting]

    def execute(self, index: int) -> None:
        executor = self.executor
        branch = Branch(executor.run_id, self.turn)
        self.turn.join(branch.pending)
        executor.enter(branch)
        try:
            executor.execute(self.rows, self.rows.steps[index], direct=False)
        except BaseException:
            # Its own error says what went wrong; what it heard is kept if it still can be.
            with contextlib.suppress(LeaseLost, DatabaseError):
                self.write_heard(branch)
            raise
        else:
            self.write_heard(branch)
            if branch.child is not None:
                with self.turn:
                    self.children.append(branch.child)
        finally:
            executor.leave()
            self.turn.leave(branch.pending)
            connections.close_all()  # this thread's own

    def write_heard(self, branch: Branch) -> None:
        """What the step's hooks heard that none of its commits wrote (it stopped at a call for
        a micro agent, or was cut short): its model calls' usage, its calls' results. Written
        before its thread ends, or it would be lost with the branch."""
        if branch.pending:
            with branch.commit(self.rows.run, self.executor.lease, fenced=True):
                pass

    def stopping(self) -> bool:
        """A cancel, a pause or the kill switch: no step starts; the next decision acts."""
        run = self.rows.run
        with self.turn:
            read_control_flags(run)
        return run.cancel_requested or run.pause_requested or engaged_switch() is not None

    def worst(self) -> BaseException:
        for kind in (LeaseLost, StopRun):
            for error in self.errors:
                if isinstance(error, kind):
                    return error
        return self.errors[0]

    def park_for_children(self) -> None:
        """Steps called for micro agents, or wait for ones working still: now that no sibling
        runs, each one asked for starts, and the run parks while any of them works (the last
        to end queues it again: orchestration.children.hand_back). Whether they work is asked
        under the run's lock, so one ending meanwhile finds the run parked. None working (each
        refused, or ended meanwhile): the next decision runs their steps on."""
        with self.executor.lock() as w:
            working = False
            for step, wait in sorted(self.children, key=lambda child: child[0].index):
                if wait is None:
                    working = micro_working(step.progress) or working
                else:
                    working = micro_spawn(self.executor, w, step, wait) or working
            if working:
                w.transition(RunStatus.WAITING_CHILDREN)
                self.executor.parked = True

    def park_if_waiting(self) -> None:
        """No step can run: if one waits for a person, the run parks on the oldest approval
        still pending, holding nothing (one decided meanwhile: the next decision runs it)."""
        open_steps = [s.pk for s in held_steps(self.rows.steps)]
        if not open_steps:
            return
        with self.executor.lock() as w:  # the run's row lock: a decision waits for this
            approval = (
                Approval.objects.filter(
                    run_id=w.run.pk, status=ApprovalStatus.PENDING, step_id__in=open_steps
                )
                .order_by("pk")
                .first()
            )
            if approval is None:
                return
            park_again(w, approval)
        self.executor.parked = True


def held_steps(steps: list[Step]) -> list[Step]:
    """The steps stopped at a call for a person's decision (decided or not)."""
    return [s for s in steps if s.progress and "approval_id" in s.progress]
