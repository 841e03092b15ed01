"""What the task's recipe (runs.task_recipe) decides, seen on a task run: the answer its
verdict gives, a Stop that cuts the model's answer in flight, and what a task never does."""

import pytest
from django.db import connection

from agents_app.engine.decide import Action, ActionKind
from agents_app.models import RunEvent, Step
from agents_app.runs.recipes import RunRows, recipe_for
from agents_app.runs.services import run_cancel
from agents_app.worker.execution import execute_run
from agents_app.worker.hooks import POLL_SECONDS
from tests.support.runs import make_run
from tests.support.script import plan_reply, step, verdict
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import make_registry

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_verdict_without_a_response_answers_with_the_last_steps_output(owner):
    run = make_run(owner, fast_path=False)
    provider = ScriptedProvider(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("look"), step("sum up"))]},
            {"match": "AGENTDESK:STEP 0", "replies": [{"content": "three files"}]},
            {"match": "AGENTDESK:STEP 1", "replies": [{"content": "the files are a, b, c"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "")]},
        ]
    )

    execute_run(run.pk, provider=provider, registry=make_registry())

    run.refresh_from_db()
    assert run.status == "succeeded"
    assert run.final_response == "the files are a, b, c"


def test_the_verifier_is_shown_what_each_step_answered(owner):
    run = make_run(owner, fast_path=False)
    provider = ScriptedProvider(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("look"))]},
            {"match": "AGENTDESK:STEP 0", "replies": [{"content": "three files: a, b, c"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "done")]},
        ]
    )

    execute_run(run.pk, provider=provider, registry=make_registry())

    (asked,) = [r for r in provider.requests if "AGENTDESK:VERIFY" in str(r.messages)]
    assert "three files: a, b, c" in str(asked.messages)


def test_a_stop_the_poll_reads_mid_answer_cuts_a_tasks_answer(owner, llm, settings):
    # Where a contract agent's answer in flight would finish (tests/contracts/test_stop.py).
    settings.AGENT_FAST_PATH_MAX_CHARS = 100
    run = make_run(owner, "Say hello", fast_path=True)

    def stop_then_answer(body):
        # In the server's thread: the person presses Stop once the request is in flight.
        run_cancel(run=run, actor=owner, interface="api")
        connection.close()
        # Each chunk comes more than a poll interval after the last, so the worker's poll
        # reads the run's flags between two of them and sees the stop mid-answer.
        return {"chunks": ["Here is ", "my answer."], "chunk_delay": POLL_SECONDS + 0.05}

    llm.script([{"match": "AGENTDESK:DIRECT", "replies": [stop_then_answer]}])

    execute_run(run.pk, registry=make_registry())

    run.refresh_from_db()
    assert run.status == "cancelled" and len(llm.requests) == 1
    (only,) = Step.objects.filter(run=run)
    assert "my answer." not in only.output
    assert only.status != "completed"


def test_a_task_neither_delegates_nor_waits_for_children_nor_has_a_conversation(owner):
    run = make_run(owner)
    rows = RunRows(run=run, plan=None, steps=[])
    task = recipe_for(run.kind)

    with pytest.raises(TypeError, match="does not delegate"):
        task.delegate(None, Action(kind=ActionKind.DELEGATE), rows)
    with pytest.raises(TypeError, match="no children to wait for"):
        task.wait(None, rows)
    with pytest.raises(TypeError, match="no conversation"):
        task.system_message(run, None)


def test_a_task_naming_a_file_the_verifier_judged_incomplete_fails_as_incomplete(owner):
    # The evidence (the file in the workspace) is asked only of a run judged complete.
    run = make_run(owner, "write hello to hello.txt", fast_path=False)
    provider = ScriptedProvider(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("write it"))]},
            {"match": "AGENTDESK:STEP 0", "replies": [{"content": "I could not write it"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(False, "", replan=False)]},
        ]
    )

    execute_run(run.pk, provider=provider, registry=make_registry())

    run.refresh_from_db()
    assert (run.status, run.error_code) == ("failed", "VERIFICATION_FAILED")


def verification_of(owner, verify_reply: dict) -> dict:
    run = make_run(owner, fast_path=False)
    provider = ScriptedProvider(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("look"))]},
            {"match": "AGENTDESK:STEP 0", "replies": [{"content": "three files"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verify_reply]},
        ]
    )
    execute_run(run.pk, provider=provider, registry=make_registry())
    return RunEvent.objects.get(run=run, type="verification").payload


def test_a_verifiers_reasoning_is_recorded_with_its_verdict_and_none_when_it_gave_none(owner):
    reasoned = verification_of(owner, {**verdict(True, "done"), "reasoning": "Three is right."})
    unreasoned = verification_of(owner, verdict(True, "done"))

    assert reasoned["thinking"] == "Three is right."
    assert "thinking" not in unreasoned
