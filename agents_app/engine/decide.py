"""The one decision: given what the database records about a run, what happens next.

Pure: no I/O. The driver loads a RunState, asks `next_action`, performs it, commits, repeats;
a crash anywhere replays nothing, because the next delivery reads the same rows and decides
the same thing. The next action is one step, except for a plan whose steps name everything
they need (`RunState.parallel`): then it is every step that can run now (PARALLEL), which the
driver runs side by side, starting their dependents as they end, and decides again once none
can run (agents_app.worker.parallel).
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum

from agents_app.engine.states import RunStatus, StepStatus

DONE = frozenset(
    {
        StepStatus.COMPLETED,
        StepStatus.FAILED,
        StepStatus.SKIPPED,
        StepStatus.TIMEOUT,
        StepStatus.CANCELLED,
    }
)
BLOCKING = frozenset(
    {StepStatus.FAILED, StepStatus.SKIPPED, StepStatus.TIMEOUT, StepStatus.CANCELLED}
)
ENDED = frozenset({RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED})
PARKED = frozenset({RunStatus.PAUSED, RunStatus.WAITING_APPROVAL, RunStatus.WAITING_CHILDREN})


class ActionKind(StrEnum):
    """What `next_action` asks of the driver; the driver performs each kind with a method of
    its own, looked up in a table (agents_app.worker.execution.RunExecutor.performers)."""

    START = "start"  # queued → planning
    PLAN = "plan"
    SKIP = "skip"  # the pending steps whose dependency did not complete
    EXECUTE = "execute"  # one step
    DELEGATE = "delegate"  # a head node: every step that can start, each to a child run
    WAIT = "wait"  # a head node whose children work: park until one ends
    # A plan whose steps name every step they need (`parallel`): every step that can run,
    # at once, each in a thread of the worker holding the lease (worker.parallel).
    PARALLEL = "parallel"
    BEGIN_VERIFY = "begin_verify"  # running → verifying
    VERIFY = "verify"
    CANCEL = "cancel"
    PAUSE = "pause"  # the kill switch is engaged
    NONE = "none"  # nothing to do: the run ended or is parked


@dataclass(frozen=True)
class StepState:
    index: int
    status: StepStatus
    depends_on: tuple[int, ...] = ()


class StepBoard:
    """A plan's steps as decisions see them, for a driver that keeps them between decisions
    (a worker under its lease) and tells the board each change of a step's status (`set`).
    What a decision asks of the steps is kept as they change: the pending steps a failed,
    skipped or timed-out dependency blocks, where the first step not yet done stands, how many
    are done. Deciding on step 500 then costs what deciding on step 5 does; a board built
    afresh from the same states decides alike (tests/engine/test_step_board.py)."""

    def __init__(self, states: Iterable[StepState] = ()):
        self.states = list(states)
        self._at = {s.index: position for position, s in enumerate(self.states)}
        self._dependents: dict[int, list[int]] = {}
        for s in self.states:
            for d in s.depends_on:
                self._dependents.setdefault(d, []).append(s.index)
        self._blocked = {s.index for s in self.states if self._is_blocked(s)}
        self.done = sum(1 for s in self.states if s.status in DONE)
        self._open = 0  # no step before this position is open (not done)

    def __len__(self) -> int:
        return len(self.states)

    def status_of(self, index: int) -> StepStatus:
        return self.states[self._at[index]].status

    def set(self, index: int, status: StepStatus) -> None:
        """Step `index` has `status` now."""
        position = self._at[index]
        old = self.states[position]
        if old.status == status:
            return
        self.states[position] = StepState(index, status, old.depends_on)
        self.done += (status in DONE) - (old.status in DONE)
        if status not in DONE and position < self._open:
            self._open = position
        if (status in BLOCKING) != (old.status in BLOCKING):
            for d in self._dependents.get(index, ()):
                self._recheck(self.states[self._at[d]])
        self._recheck(self.states[position])

    def blocked(self) -> tuple[int, ...]:
        """The pending steps a dependency that did not complete blocks, in index order."""
        return tuple(sorted(self._blocked))

    def open_steps(self) -> Iterator[StepState]:
        """The steps not done, in index order (from the first of them, found once)."""
        while self._open < len(self.states) and self.states[self._open].status in DONE:
            self._open += 1
        states = self.states
        return (states[p] for p in range(self._open, len(states)) if states[p].status not in DONE)

    def _is_blocked(self, step: StepState) -> bool:
        return step.status == StepStatus.PENDING and any(
            self.status_of(d) in BLOCKING for d in step.depends_on
        )

    def _recheck(self, step: StepState) -> None:
        if self._is_blocked(step):
            self._blocked.add(step.index)
        else:
            self._blocked.discard(step.index)


@dataclass(frozen=True)
class RunState:
    status: RunStatus
    cancel_requested: bool = False
    # The kill switch is engaged: stop at this step boundary.
    halted: bool = False
    # A person paused this run: park at this step boundary until they resume it.
    pause_requested: bool = False
    # A tuple of states, or the board a driver keeps (StepBoard): the same decision.
    steps: tuple[StepState, ...] | StepBoard = ()
    # Its steps are done by child runs (a team's head node): a running step is a child at
    # work, and every step that can start starts at once.
    delegates: bool = False
    # Its plan says its steps' depends_on are complete (the planner's `parallel`): a step
    # needs nothing but them, so the steps that need nothing unfinished run side by side. A
    # plan that does not say so runs its steps one after another, in index order, as a step
    # may use what any earlier one found without naming it.
    parallel: bool = False


@dataclass(frozen=True)
class Action:
    kind: ActionKind
    step_index: int | None = None
    skip: tuple[int, ...] = ()
    delegate: tuple[int, ...] = ()
    parallel: tuple[int, ...] = ()


def ready_steps(steps: StepBoard) -> tuple[int, ...]:
    """The steps not done whose dependencies all completed, in index order: those that can
    run now (a running one was interrupted, or waits for a person, and continues)."""
    return tuple(
        s.index
        for s in steps.open_steps()
        if all(steps.status_of(d) == StepStatus.COMPLETED for d in s.depends_on)
    )


def next_action(state: RunState) -> Action:
    if state.status in ENDED:
        return Action(ActionKind.NONE)
    if state.cancel_requested:
        return Action(ActionKind.CANCEL)
    if state.status in PARKED:
        # parked until the kill switch is released or a person decides
        return Action(ActionKind.NONE)
    if state.halted or state.pause_requested:
        return Action(ActionKind.PAUSE)
    if state.status == RunStatus.QUEUED:
        return Action(ActionKind.START)
    if state.status == RunStatus.PLANNING:
        return Action(ActionKind.PLAN)
    if state.status == RunStatus.VERIFYING:
        return Action(ActionKind.VERIFY)
    # running: skip what can no longer run, then the first runnable step in index order
    # (dependencies only point backwards, so index order is a valid order).
    steps = state.steps if isinstance(state.steps, StepBoard) else StepBoard(state.steps)
    blocked = steps.blocked()
    if blocked:
        return Action(ActionKind.SKIP, skip=blocked)
    if state.delegates:
        ready = tuple(
            s.index
            for s in steps.open_steps()
            if s.status == StepStatus.PENDING
            and all(steps.status_of(d) == StepStatus.COMPLETED for d in s.depends_on)
        )
        if ready:
            return Action(ActionKind.DELEGATE, delegate=ready)
        if steps.done < len(steps):
            return Action(ActionKind.WAIT)
        return Action(ActionKind.BEGIN_VERIFY)  # every step done
    if state.parallel:
        # Dependencies point backwards: the first open step is ready, or blocked (skipped
        # above), so nothing ready means every step is done.
        ready = ready_steps(steps)
        if ready:
            return Action(ActionKind.PARALLEL, parallel=ready)
        return Action(ActionKind.BEGIN_VERIFY)
    for step in steps.open_steps():
        if all(steps.status_of(d) == StepStatus.COMPLETED for d in step.depends_on):
            return Action(ActionKind.EXECUTE, step_index=step.index)
    return Action(ActionKind.BEGIN_VERIFY)
