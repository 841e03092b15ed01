"""A board told each change of its steps' statuses decides as the plain reading of the same
states does (the decision before boards existed, kept here as the reference), whatever the
plan and the order of the changes."""

from hypothesis import given, settings
from hypothesis import strategies as st

from agents_app.engine.decide import (
    BLOCKING,
    DONE,
    Action,
    ActionKind,
    RunState,
    StepBoard,
    StepState,
    next_action,
)
from agents_app.engine.states import StepStatus

STATUSES = [s.value for s in StepStatus]


def reference(steps: tuple[StepState, ...], delegates: bool) -> Action:
    """next_action's reading of a running run's steps, scanning them all every time."""
    by_index = {s.index: s for s in steps}
    blocked = tuple(
        s.index
        for s in steps
        if s.status == StepStatus.PENDING
        and any(by_index[d].status in BLOCKING for d in s.depends_on)
    )
    if blocked:
        return Action(ActionKind.SKIP, skip=blocked)
    if delegates:
        ready = tuple(
            s.index
            for s in steps
            if s.status == StepStatus.PENDING
            and all(by_index[d].status == StepStatus.COMPLETED for d in s.depends_on)
        )
        if ready:
            return Action(ActionKind.DELEGATE, delegate=ready)
        if any(s.status not in DONE for s in steps):
            return Action(ActionKind.WAIT)
        return Action(ActionKind.BEGIN_VERIFY)
    for step in steps:
        if step.status in DONE:
            continue
        if all(by_index[d].status == StepStatus.COMPLETED for d in step.depends_on):
            return Action(ActionKind.EXECUTE, step_index=step.index)
    return Action(ActionKind.BEGIN_VERIFY)


@st.composite
def plans_and_changes(draw):
    size = draw(st.integers(1, 10))
    states = [
        StepState(
            i,
            draw(st.sampled_from(STATUSES)),
            tuple(sorted(draw(st.sets(st.integers(0, i - 1), max_size=3)))) if i else (),
        )
        for i in range(size)
    ]
    changes = draw(
        st.lists(st.tuples(st.integers(0, size - 1), st.sampled_from(STATUSES)), max_size=30)
    )
    return states, changes


@settings(max_examples=400, deadline=None)
@given(plans_and_changes(), st.booleans())
def test_a_board_told_every_change_decides_as_the_steps_read_afresh(plan, delegates):
    states, changes = plan
    board = StepBoard(states)
    for index, status in changes:
        board.set(index, status)
        states[index] = StepState(index, status, states[index].depends_on)
        current = tuple(states)
        decided = next_action(RunState("running", steps=board, delegates=delegates))
        assert decided == reference(current, delegates)
        assert decided == next_action(RunState("running", steps=current, delegates=delegates))
        assert board.done == sum(1 for s in current if s.status in DONE)


def test_a_step_put_back_to_pending_before_the_first_open_one_is_found_again():
    board = StepBoard(StepState(i, StepStatus.COMPLETED) for i in range(3))
    assert next_action(RunState("running", steps=board)).kind == ActionKind.BEGIN_VERIFY
    board.set(1, StepStatus.PENDING)
    assert next_action(RunState("running", steps=board)) == Action(ActionKind.EXECUTE, 1)


class ReadCounting(list):
    """A board's states, counting the reads of a step."""

    reads = 0

    def __getitem__(self, position):
        self.reads += 1
        return super().__getitem__(position)


def test_a_decision_reads_a_handful_of_steps_however_far_the_run_is():
    # A worker asks next_action before every step: on step 900 of a long plan that must not
    # scan the 899 steps done before it (the board keeps where the first open step stands).
    size = 1000
    board = StepBoard(StepState(i, StepStatus.PENDING, (i - 1,) if i else ()) for i in range(size))
    board.states = ReadCounting(board.states)
    reads = []
    for index in range(size):
        board.states.reads = 0
        assert next_action(RunState("running", steps=board)) == Action(ActionKind.EXECUTE, index)
        reads.append(board.states.reads)
        board.set(index, StepStatus.COMPLETED)
    assert next_action(RunState("running", steps=board)) == Action(ActionKind.BEGIN_VERIFY)
    assert max(reads) <= 10
