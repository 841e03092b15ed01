"""The one decision: given what the database records about a run, what happens next.

Pure: no I/O. The driver loads a RunState, asks `next_action`, performs it, commits, repeats;
a crash anywhere replays nothing, because the next delivery reads the same rows and decides
the same thing.
"""

from dataclasses import dataclass
from enum import StrEnum

from agents_app.engine.states import RunStatus, StepStatus

DONE = frozenset({StepStatus.COMPLETED, StepStatus.FAILED, StepStatus.SKIPPED, StepStatus.TIMEOUT})
BLOCKING = frozenset({StepStatus.FAILED, StepStatus.SKIPPED, StepStatus.TIMEOUT})
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


@dataclass(frozen=True)
class RunState:
    status: RunStatus
    cancel_requested: bool = False
    # The kill switch is engaged: stop at this step boundary.
    halted: bool = False
    # A person paused this run: park at this step boundary until they resume it.
    pause_requested: bool = False
    steps: tuple[StepState, ...] = ()
    # Its steps are done by child runs (a team's head node): a running step is a child at
    # work, and every step that can start starts at once.
    delegates: bool = False


@dataclass(frozen=True)
class Action:
    kind: ActionKind
    step_index: int | None = None
    skip: tuple[int, ...] = ()
    delegate: tuple[int, ...] = ()


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
    by_index = {s.index: s for s in state.steps}
    blocked = tuple(
        s.index
        for s in state.steps
        if s.status == StepStatus.PENDING
        and any(by_index[d].status in BLOCKING for d in s.depends_on)
    )
    if blocked:
        return Action(ActionKind.SKIP, skip=blocked)
    if state.delegates:
        ready = tuple(
            s.index
            for s in state.steps
            if s.status == StepStatus.PENDING
            and all(by_index[d].status == StepStatus.COMPLETED for d in s.depends_on)
        )
        if ready:
            return Action(ActionKind.DELEGATE, delegate=ready)
        if any(s.status not in DONE for s in state.steps):
            return Action(ActionKind.WAIT)
        return Action(ActionKind.BEGIN_VERIFY)
    for step in state.steps:
        if step.status in DONE:
            continue
        if all(by_index[d].status == StepStatus.COMPLETED for d in step.depends_on):
            return Action(ActionKind.EXECUTE, step_index=step.index)
    return Action(ActionKind.BEGIN_VERIFY)
