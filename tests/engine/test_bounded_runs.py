"""Bounded answers through the engine and the database, with the in-process scripted LLM: a
cut-off answer is asked for again once and then ends the phase with ANSWER_TOO_LONG, never a
wait for the phase timeout; its tokens count; plans are asked for through a schema that names
only the offered tools."""

import pytest

from agents_app.models import Step
from agents_app.worker.execution import execute_run
from tests.support.runs import make_run
from tests.support.script import plan_reply, step, tool_call, verdict
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import EchoTool, FinishTool, make_registry
from tools_app.builtin.control import FinishTaskTool

pytestmark = pytest.mark.django_db(transaction=True)

RUNAWAY = {
    "content": '{"steps": [{"objective": "' + "and again " * 50,
    "finish_reason": "length",
    "usage": {"prompt_tokens": 100, "completion_tokens": 1536},
}


def run_with(owner, rules, finish=None, **run_kwargs):
    run = make_run(owner, **run_kwargs)
    provider = ScriptedProvider(rules)
    registry = make_registry(EchoTool(), finish or FinishTool())
    execute_run(run.pk, provider=provider, registry=registry)
    run.refresh_from_db()
    return run, provider


def test_a_plan_cut_off_twice_fails_answer_too_long_with_its_tokens_counted(owner, settings):
    settings.LLM_MAX_TOKENS_PLAN = 1536
    run, provider = run_with(owner, [{"match": "AGENTDESK:PLAN", "replies": [RUNAWAY, RUNAWAY]}])

    assert (run.status, run.error_code) == ("failed", "ANSWER_TOO_LONG")
    assert "1536-token limit" in run.error_message
    assert [r.max_tokens for r in provider.requests] == [1536, 1536]
    # The second request starts again from the task, told to be brief; the runaway is not echoed.
    retry = provider.requests[1].messages
    assert "cut off" in retry[-1]["content"] and "and again" not in str(retry)
    assert (run.prompt_tokens, run.completion_tokens) == (200, 3072)


def test_a_plan_cut_off_once_is_asked_again_and_the_run_goes_on(owner):
    run, _ = run_with(
        owner,
        [
            {"match": "AGENTDESK:PLAN", "replies": [RUNAWAY, plan_reply(step("think"))]},
            {"match": "AGENTDESK:STEP", "replies": [{"content": "thought"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict()]},
        ],
    )

    assert run.status == "succeeded"


def test_a_step_cut_off_twice_fails_with_answer_too_long(owner, settings):
    settings.LLM_MAX_TOKENS_STEP = 64
    settings.AGENT_MAX_REPLANS = 0
    cut = {"content": "word " * 64, "finish_reason": "length"}
    run, provider = run_with(
        owner,
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("talk"))]},
            {"match": "AGENTDESK:STEP", "replies": [cut, cut]},
        ],
    )

    (only,) = Step.objects.filter(run=run)
    assert only.status == "failed" and only.error.startswith("ANSWER_TOO_LONG")
    assert "64-token limit" in only.error
    step_requests = [r for r in provider.requests if r.tools]
    assert [r.max_tokens for r in step_requests] == [64, 64]


def test_the_plan_schema_offers_only_the_tools_there_are(owner, settings):
    settings.AGENT_MAX_STEPS = 7
    run, provider = run_with(
        owner,
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("say", ["echo"], [0, 3]))]},
            {
                "match": "AGENTDESK:STEP",
                "replies": [tool_call("echo", text="x"), {"content": "ok"}],
            },
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(evidence=[1])]},
        ],
    )

    schema = provider.requests[0].response_schema
    steps = schema["properties"]["steps"]
    assert steps["maxItems"] == 7
    assert steps["items"]["properties"]["tool_names"]["items"] == {"enum": ["echo", "finish_task"]}
    assert "description" not in str(schema)
    # A dependency on itself or a later step means nothing in an ordered plan: dropped.
    assert Step.objects.get(run=run).depends_on == []
    assert run.status == "succeeded"


def test_a_step_that_needs_a_tool_requires_a_call_on_its_first_turn_only(owner):
    _, provider = run_with(
        owner,
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("say", ["echo"]))]},
            {
                "match": "AGENTDESK:STEP",
                "replies": [tool_call("echo", text="x"), {"content": "ok"}],
            },
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(evidence=[1])]},
        ],
    )

    assert [r.tool_required for r in provider.requests if r.tools] == [True, False]


def test_finish_task_with_success_false_is_not_a_success(owner, settings):
    settings.AGENT_MAX_REPLANS = 0
    gave_up = tool_call("finish_task", result="could not do it", success=False)
    run, _ = run_with(
        owner,
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("try", ["finish_task"]))]},
            {"match": "AGENTDESK:STEP", "replies": [gave_up]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(False, "it gave up")]},
        ],
        finish=FinishTaskTool(),
    )

    (only,) = Step.objects.filter(run=run)
    assert only.status == "failed" and "not accomplished" in only.error
    assert run.status == "failed" and run.final_response == ""
