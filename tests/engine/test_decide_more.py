"""More of the one decision: the states tests/engine/test_decide.py does not visit, and the
values it reads and returns, which nothing may change between two decisions."""

import dataclasses

import pytest

from agents_app.engine.decide import Action, ActionKind, RunState, StepState, next_action


def test_a_verifying_run_verifies():
    state = RunState("verifying", steps=(StepState(0, "completed"),))
    assert next_action(state) == Action(ActionKind.VERIFY)


@pytest.mark.parametrize("status", ["succeeded", "failed", "cancelled"])
def test_an_ended_run_has_nothing_left_to_do_even_when_halted(status):
    assert next_action(RunState(status, halted=True)) == Action(ActionKind.NONE)


def test_a_run_waiting_for_a_person_waits_even_when_halted_but_can_be_cancelled():
    assert next_action(RunState("waiting_approval", halted=True)) == Action(ActionKind.NONE)
    state = RunState("waiting_approval", cancel_requested=True)
    assert next_action(state) == Action(ActionKind.CANCEL)


def test_the_kill_switch_stops_a_run_before_it_plans_or_verifies():
    for status in ("queued", "planning", "verifying"):
        assert next_action(RunState(status, halted=True)) == Action(ActionKind.PAUSE)


def test_a_running_run_with_no_step_left_verifies():
    assert next_action(RunState("running")) == Action(ActionKind.BEGIN_VERIFY)


def test_every_step_a_failure_blocks_is_skipped_at_once():
    state = RunState(
        "running",
        steps=(
            StepState(0, "timeout"),
            StepState(1, "pending", (0,)),
            StepState(2, "completed"),
            StepState(3, "pending", (2, 0)),
            StepState(4, "pending", (2,)),
        ),
    )
    assert next_action(state) == Action(ActionKind.SKIP, skip=(1, 3))


@pytest.mark.parametrize(
    "value",
    [RunState("running"), StepState(0, "pending"), Action(ActionKind.EXECUTE, step_index=0)],
)
def test_the_decisions_inputs_and_outputs_are_values_nobody_can_change(value):
    field = dataclasses.fields(value)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, field, None)
    assert hash(value) == hash(dataclasses.replace(value))
