"""The fast path driven through the database with an in-process scripted LLM (no Celery):
one step, the direct prompt, a derived verdict, and the planner when the direct attempt fails.
The same through a real worker is in tests/worker/test_fast_path.py."""

import pytest

from agents_app.models import Plan, RunEvent, Step
from agents_app.worker.execution import execute_run
from tests.support.runs import make_run
from tests.support.script import plan_reply, step, tool_call, verdict
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import BrokenTool, EchoTool, FinishTool, make_registry

pytestmark = pytest.mark.django_db(transaction=True)


def run_with(owner, rules, registry, **run_kwargs):
    run = make_run(owner, **run_kwargs)
    provider = ScriptedProvider(rules)
    execute_run(run.pk, provider=provider, registry=registry)
    run.refresh_from_db()
    return run, provider


def markers(provider):
    return [r.messages[0]["content"].splitlines()[0] for r in provider.requests]


def test_a_short_task_runs_as_one_direct_step_without_planner_or_verifier(owner, settings):
    settings.AGENT_FAST_PATH_MAX_CHARS = 40
    echo = EchoTool()
    run, provider = run_with(
        owner,
        [
            {
                "match": "AGENTDESK:DIRECT",
                "replies": [tool_call("echo", text="hi"), tool_call("finish_task", result="hi")],
            }
        ],
        make_registry(echo, BrokenTool(), FinishTool()),
        text="Say hi with echo",
    )
    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert run.final_response == "hi" and echo.calls == ["hi"]
    assert markers(provider) == ["AGENTDESK:DIRECT", "AGENTDESK:DIRECT"]
    assert provider.requests[0].messages[1]["content"] == "Task: Say hi with echo"
    # Every tool is offered, not a planner's pick.
    assert {t.name for t in provider.requests[0].tools} == {"echo", "broken", "finish_task"}
    plan = Plan.objects.get(run=run)
    assert plan.version == 1 and plan.raw["fast_path"] is True
    only = Step.objects.get(plan=plan)
    assert (only.objective, sorted(only.tool_names), only.status) == (
        "Say hi with echo",
        ["broken", "echo", "finish_task"],
        "completed",
    )
    created = RunEvent.objects.get(run=run, type="plan_created").payload
    assert created["fast_path"] is True and len(created["steps"]) == 1
    verification = RunEvent.objects.get(run=run, type="verification").payload
    assert verification["task_complete"] is True and verification["response"] == "hi"
    statuses = [e.payload["status"] for e in RunEvent.objects.filter(run=run, type="run_status")]
    assert statuses == ["planning", "running", "verifying", "succeeded"]


def test_a_long_task_is_planned_as_before(owner, settings):
    settings.AGENT_FAST_PATH_MAX_CHARS = 10
    run, provider = run_with(
        owner,
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("think"))]},
            {"match": "AGENTDESK:STEP 0", "replies": [{"content": "thought"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "ok")]},
        ],
        make_registry(),
        text="Think about this longer task",
    )
    assert run.status == "succeeded"
    assert markers(provider) == ["AGENTDESK:PLAN", "AGENTDESK:STEP 0", "AGENTDESK:VERIFY"]
    assert "fast_path" not in Plan.objects.get(run=run).raw


def test_a_failed_direct_step_hands_the_task_to_the_planner_with_its_history(owner):
    run, provider = run_with(
        owner,
        [
            {"match": "AGENTDESK:DIRECT", "replies": [tool_call("broken")]},
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("echo it", ["echo"]))]},
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [tool_call("echo", text="x"), {"content": "echoed"}],
            },
            {
                "match": "AGENTDESK:VERIFY",
                "replies": [verdict(True, "planned and done", evidence=[2])],
            },
        ],
        make_registry(),
        fast_path=True,
    )
    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert run.final_response == "planned and done" and run.replans == 1
    assert markers(provider) == [
        "AGENTDESK:DIRECT",
        "AGENTDESK:PLAN",
        "AGENTDESK:STEP 0",
        "AGENTDESK:STEP 0",
        "AGENTDESK:VERIFY",
    ]
    replanned = RunEvent.objects.get(run=run, type="replanned").payload
    assert replanned["reason"].startswith("the direct attempt did not finish: TOOL_FAILED")
    # The planner sees what the direct attempt did.
    plan_request = provider.requests[1].messages[1]["content"]
    assert "the direct attempt did not finish" in plan_request and "broken" in plan_request
    assert list(Plan.objects.filter(run=run).values_list("version", flat=True)) == [1, 2]


def test_without_replans_a_failed_direct_step_fails_the_run_with_its_code(owner, settings):
    settings.AGENT_MAX_REPLANS = 0
    run, provider = run_with(
        owner,
        [{"match": "AGENTDESK:DIRECT", "replies": [tool_call("no_such_tool")]}],
        make_registry(),
        fast_path=True,
    )
    assert (run.status, run.error_code) == ("failed", "TOOL_NOT_FOUND")
    assert "no_such_tool" in run.error_message
    assert markers(provider) == ["AGENTDESK:DIRECT"]
