"""The model's reasoning is kept per phase: the planner's on its Plan, the verifier's in its
verification event, beside each step's own (Step.thinking)."""

import pytest

from agents_app.models import Plan, RunEvent, Step
from agents_app.worker.execution import execute_run
from tests.support.runs import make_run
from tests.support.script import plan_reply, step, verdict
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import make_registry

pytestmark = pytest.mark.django_db(transaction=True)


def run_with(owner, rules):
    run = make_run(owner)
    execute_run(run.pk, provider=ScriptedProvider(rules), registry=make_registry())
    run.refresh_from_db()
    return run


def test_the_planners_reasoning_is_stored_on_its_plan(owner):
    run = run_with(
        owner,
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [{**plan_reply(step("Answer")), "reasoning": "One step answers this."}],
            },
            {"match": "AGENTDESK:STEP 0", "replies": [{"content": "42", "reasoning": "Easy."}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "42")]},
        ],
    )

    assert run.status == "succeeded"
    assert Plan.objects.get(run=run).thinking == "One step answers this."
    assert Step.objects.get(run=run).thinking == "Easy."


def test_the_verifiers_reasoning_is_stored_in_its_verdict(owner):
    run = run_with(
        owner,
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("Answer"))]},
            {"match": "AGENTDESK:STEP 0", "replies": [{"content": "42"}]},
            {
                "match": "AGENTDESK:VERIFY",
                "replies": [{**verdict(True, "42"), "reasoning": "The step said 42."}],
            },
        ],
    )

    payload = RunEvent.objects.get(run=run, type="verification").payload
    assert payload["thinking"] == "The step said 42."
    assert Plan.objects.get(run=run).thinking == ""


def test_a_phase_without_reasoning_adds_nothing_to_the_verdict(owner):
    run = run_with(
        owner,
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("Answer"))]},
            {"match": "AGENTDESK:STEP 0", "replies": [{"content": "42"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "42")]},
        ],
    )

    assert "thinking" not in RunEvent.objects.get(run=run, type="verification").payload
