"""Phase timeouts, through the real OpenAI-wire provider and the scripted server (no Celery)."""

import json

import pytest

from agents_app.engine.openai_provider import OpenAICompatibleProvider
from agents_app.models import Step
from agents_app.worker.execution import execute_run
from tests.support.llm_server import ScriptedLLMServer
from tests.support.runs import make_run
from tests.support.tools import make_registry

pytestmark = pytest.mark.django_db(transaction=True)

PLAN = {"content": json.dumps({"steps": [{"objective": "slow step"}]})}
VERDICT = {"content": json.dumps({"task_complete": True, "reasoning": "ok", "response": "ok"})}


@pytest.fixture(scope="module")
def server():
    with ScriptedLLMServer() as running:
        yield running


def run_against(server, owner, rules):
    server.reset()
    server.script(rules)
    provider = OpenAICompatibleProvider(
        base_url=server.base_url, api_key="", model="scripted", retry_base_delay=0.01
    )
    run = make_run(owner)
    execute_run(run.pk, provider=provider, registry=make_registry())
    run.refresh_from_db()
    return run


def test_a_slow_planner_fails_the_run_as_planning_timeout(server, owner, settings):
    settings.AGENT_PLAN_TIMEOUT = 0.5
    run = run_against(
        server, owner, [{"match": "AGENTDESK:PLAN", "replies": [{**PLAN, "delay": 2}]}]
    )
    assert (run.status, run.error_code) == ("failed", "PLANNING_TIMEOUT")


def test_a_slow_step_times_out_and_the_run_goes_on_to_verification(server, owner, settings):
    settings.AGENT_STEP_TIMEOUT = 0.5
    run = run_against(
        server,
        owner,
        [
            {"match": "AGENTDESK:PLAN", "replies": [PLAN]},
            {"match": "AGENTDESK:STEP 0", "replies": [{"content": "late", "delay": 2}]},
            {"match": "AGENTDESK:VERIFY", "replies": [VERDICT]},
        ],
    )
    step = Step.objects.get(run=run)
    assert step.status == "timeout" and step.error.startswith("EXECUTION_TIMEOUT")
    assert run.status == "succeeded"  # the verifier judged what there was


def test_a_slow_verifier_fails_the_run_as_verification_timeout(server, owner, settings):
    settings.AGENT_VERIFY_TIMEOUT = 0.5
    run = run_against(
        server,
        owner,
        [
            {"match": "AGENTDESK:PLAN", "replies": [PLAN]},
            {"match": "AGENTDESK:STEP 0", "replies": [{"content": "done"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [{**VERDICT, "delay": 2}]},
        ],
    )
    assert (run.status, run.error_code) == ("failed", "VERIFICATION_TIMEOUT")


def test_a_run_past_its_deadline_fails_as_execution_timeout(server, owner, settings):
    settings.AGENT_RUN_TIMEOUT = 1.0
    run = run_against(
        server,
        owner,
        [
            {"match": "AGENTDESK:PLAN", "replies": [PLAN]},
            {"match": "AGENTDESK:STEP 0", "replies": [{"content": "done", "delay": 1.2}]},
            {"match": "AGENTDESK:VERIFY", "replies": [VERDICT]},
        ],
    )
    assert (run.status, run.error_code) == ("failed", "EXECUTION_TIMEOUT")
