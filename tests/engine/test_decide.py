from agents_app.engine.decide import RunState, StepState, next_action


def steps(*pairs):
    return tuple(StepState(i, status, tuple(deps)) for i, (status, deps) in enumerate(pairs))


def test_a_queued_run_starts():
    assert next_action(RunState("queued")).kind == "start"


def test_a_planning_run_plans():
    assert next_action(RunState("planning")).kind == "plan"


def test_it_runs_the_first_step_not_completed():
    state = RunState("running", steps=steps(("completed", []), ("pending", [0]), ("pending", [])))
    action = next_action(state)
    assert (action.kind, action.step_index) == ("execute", 1)


def test_it_resumes_a_step_left_running_by_a_crash():
    state = RunState("running", steps=steps(("completed", []), ("running", [0])))
    assert next_action(state).step_index == 1


def test_it_skips_steps_whose_dependency_failed():
    state = RunState("running", steps=steps(("failed", []), ("pending", [0]), ("pending", [])))
    action = next_action(state)
    assert (action.kind, action.skip) == ("skip", (1,))


def test_independent_steps_still_run_after_a_failure():
    state = RunState("running", steps=steps(("failed", []), ("skipped", [0]), ("pending", [])))
    assert next_action(state).step_index == 2


def test_it_verifies_when_every_step_is_done():
    state = RunState("running", steps=steps(("completed", []), ("timeout", [])))
    assert next_action(state).kind == "begin_verify"


def test_a_cancel_request_wins_over_everything_but_the_end():
    assert next_action(RunState("running", cancel_requested=True)).kind == "cancel"
    assert next_action(RunState("succeeded", cancel_requested=True)).kind == "none"


def test_the_kill_switch_pauses_an_active_run_at_the_boundary():
    state = RunState("running", halted=True, steps=steps(("pending", [])))
    assert next_action(state).kind == "pause"


def test_a_paused_run_waits_but_can_still_be_cancelled():
    assert next_action(RunState("paused")).kind == "none"
    assert next_action(RunState("paused", halted=True)).kind == "none"
    assert next_action(RunState("paused", cancel_requested=True)).kind == "cancel"


def test_a_parallel_plan_runs_every_step_whose_dependencies_completed_at_once():
    plan = steps(("pending", []), ("running", []), ("pending", []), ("pending", [0, 1, 2]))
    action = next_action(RunState("running", steps=plan, parallel=True))
    assert (action.kind, action.parallel) == ("parallel", (0, 1, 2))


def test_a_parallel_plan_s_dependent_waits_for_every_step_it_needs():
    plan = steps(("completed", []), ("completed", []), ("running", []), ("pending", [0, 1, 2]))
    action = next_action(RunState("running", steps=plan, parallel=True))
    assert (action.kind, action.parallel) == ("parallel", (2,))
    done = steps(*[("completed", [])] * 3, ("pending", [0, 1, 2]))
    assert next_action(RunState("running", steps=done, parallel=True)).parallel == (3,)


def test_a_parallel_plan_verifies_once_every_step_is_done_and_skips_what_cannot_run():
    plan = steps(("failed", []), ("completed", []), ("pending", [0]))
    assert next_action(RunState("running", steps=plan, parallel=True)).skip == (2,)
    done = steps(("completed", []), ("skipped", []))
    assert next_action(RunState("running", steps=done, parallel=True)).kind == "begin_verify"


def test_a_plan_that_does_not_say_parallel_runs_one_step_at_a_time():
    plan = steps(("pending", []), ("pending", []), ("pending", []))
    action = next_action(RunState("running", steps=plan))
    assert (action.kind, action.step_index) == ("execute", 0)
