"""The one decision: given what the database records about a run, what happens next.

Pure: no I/O. The driver loads a RunState, asks `next_action`, performs it, commits, repeats;
a crash anywhere replays nothing, because the next delivery reads the same rows and decides
the same thing.
"""

from dataclasses import dataclass

from agents_app.engine.states import RunStatus, StepStatus

DONE = frozenset({StepStatus.COMPLETED, StepStatus.FAILED, StepStatus.SKIPPED, StepStatus.TIMEOUT})
BLOCKING = frozenset({StepStatus.FAILED, StepStatus.SKIPPED, StepStatus.TIMEOUT})
ENDED = frozenset({RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED})
PARKED = frozenset({RunStatus.PAUSED, RunStatus.WAITING_APPROVAL})


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
    steps: tuple[StepState, ...] = ()


@dataclass(frozen=True)
class Action:
    kind: str  # start | plan | skip | execute | begin_verify | verify | cancel | pause | none
    step_index: int | None = None
    skip: tuple[int, ...] = ()


def next_action(state: RunState) -> Action:
    if state.status in ENDED:
        return Action("none")
    if state.cancel_requested:
        return Action("cancel")
    if state.status in PARKED:
        return Action("none")  # parked until the kill switch is released or a person decides
    if state.halted:
        return Action("pause")
    if state.status == RunStatus.QUEUED:
        return Action("start")
    if state.status == RunStatus.PLANNING:
        return Action("plan")
    if state.status == RunStatus.VERIFYING:
        return Action("verify")
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
        return Action("skip", skip=blocked)
    for step in state.steps:
        if step.status in DONE:
            continue
        if all(by_index[d].status == StepStatus.COMPLETED for d in step.depends_on):
            return Action("execute", step_index=step.index)
    return Action("begin_verify")
