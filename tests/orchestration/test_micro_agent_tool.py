"""Seed 003's micro agent from any run: a step of a plain task, a chat answer and a contract
agent's cycle call `start_micro_agent`; a child run of kind micro does the subtask while its
parent parks holding no worker, and the child's finish_task result is the call's result.
Driven through the database in this process: each queued run's delivery performed by hand."""

import json

import pytest

from agents_app.contracts.services import agent_create, agent_start, agent_stop
from agents_app.conversations.services import conversation_create, message_post
from agents_app.engine.untrusted import data_of
from agents_app.models import Run, ToolCall
from agents_app.runs.services import run_cancel, run_pause, run_resume
from agents_app.worker.execution import execute_run
from tests.support.runs import make_run
from tests.support.script import json_reply, messages_text, plan_reply, step, tool_call, verdict
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import EchoTool, FinishTool, make_registry
from tools_app.builtin import MicroAgentTool

pytestmark = pytest.mark.django_db(transaction=True)

PERSONA = "You are a careful reviewer of notes."
FOUND = "the notes are fine"


def micro_call(task="Review the notes in notes.txt", **more) -> dict:
    return tool_call("start_micro_agent", task=task, persona=PERSONA, max_steps=3, **more)


# The micro agent's own turns: its persona opens its system prompt.
REVIEWER = {"match": PERSONA, "replies": [tool_call("finish_task", result=FOUND)]}
PLAN = {
    "match": "AGENTDESK:PLAN",
    "replies": [plan_reply(step("Have the notes reviewed", ["start_micro_agent"]))],
}


def registry():
    return make_registry(EchoTool(), FinishTool(), MicroAgentTool())


def deliver(run_id: int, provider, tools) -> Run:
    execute_run(run_id, provider=provider, registry=tools)
    return Run.objects.get(pk=run_id)


def drain(queued_runs: list[int], provider, tools) -> None:
    """Deliver every run queued for a worker, in order, until none is left."""
    while queued_runs:
        deliver(queued_runs.pop(0), provider, tools)


def micro_child_of(run: Run) -> Run:
    (child,) = Run.objects.filter(parent=run)
    assert (child.kind, child.root_id, child.depth) == ("micro", run.pk, 1)
    assert child.task.persona == PERSONA
    return child


def answered_call(run: Run) -> ToolCall:
    (call,) = ToolCall.objects.filter(run=run, tool="start_micro_agent")
    assert call.status == "succeeded", call.error
    assert call.result["result"] == FOUND
    return call


def test_a_tasks_step_starts_a_micro_agent_parks_and_goes_on_with_its_result(
    owner, owner_session, queued_runs
):
    tools = registry()
    provider = ScriptedProvider(
        [
            REVIEWER,
            PLAN,
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [micro_call(), {"content": f"The reviewer says {FOUND}."}],
            },
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, FOUND, evidence=[1])]},
        ]
    )
    run = make_run(owner, "Get the notes reviewed by a reviewer", fast_path=False)

    run = deliver(run.pk, provider, tools)

    assert run.status == "waiting_children" and run.lease_owner == ""
    child = micro_child_of(run)
    assert queued_runs == [child.pk]
    assert "start_micro_agent" in child.task.allowed_tools
    assert child.task.context["max_steps"] == 3
    drain(queued_runs, provider, tools)
    run.refresh_from_db()
    child.refresh_from_db()
    assert child.status == "succeeded" and child.final_response == FOUND
    assert run.status == "succeeded", (run.error_code, run.error_message)
    answered_call(run)
    # The parent's step heard the child's result as its call's answer, as data (issue 35).
    last = [r for r in provider.requests if "AGENTDESK:STEP 0" in messages_text(r.messages)][-1]
    heard = last.messages[-1]["content"]
    assert heard.startswith("<untrusted-") and 'source="start_micro_agent"' in heard
    assert json.loads(data_of(heard))["result"] == FOUND
    # The run's page shows its tree: the task and, under it, the micro agent.
    html = owner_session.get(f"/runs/{run.pk}/").content.decode()
    assert f'id="team-run-{run.pk}"' in html and f'id="team-run-{child.pk}"' in html


def test_a_chat_answer_starts_a_micro_agent_and_answers_with_its_result(owner, llm, queued_runs):
    tools = registry()
    chat = conversation_create(owner=owner, interface="api")
    _, run = message_post(conversation=chat, actor=owner, interface="api", text="Review notes")
    provider = ScriptedProvider(
        [
            REVIEWER,
            {
                "match": "AGENTDESK:CHAT",
                "replies": [micro_call(), {"content": f"Reviewed: {FOUND}."}],
            },
        ]
    )

    run = deliver(run.pk, provider, tools)
    assert run.status == "waiting_children"
    child = micro_child_of(run)
    drain(queued_runs, provider, tools)

    run.refresh_from_db()
    assert (run.kind, run.status) == ("chat", "succeeded"), (run.error_code, run.error_message)
    assert run.final_response == f"Reviewed: {FOUND}."
    assert Run.objects.get(pk=child.pk).status == "succeeded"
    answered_call(run)


def test_a_contract_agent_starts_a_micro_agent_and_its_cycle_goes_on_with_its_result(
    owner, llm, queued_runs, settings, tmp_path
):
    settings.AGENT_LOG_DIR = tmp_path / "logs"
    tools = registry()
    agent = agent_create(owner=owner, interface="api", contract="Get the notes reviewed.")
    run = agent_start(agent=agent, actor=owner, interface="api")
    queued_runs.clear()
    provider = ScriptedProvider(
        [
            REVIEWER,
            {
                "match": "AGENTDESK:EVALUATE",
                "replies": [json_reply({"met": True, "reason": FOUND, "evidence": [1]})],
            },
            {"match": "AGENTDESK:CONTRACT", "replies": [micro_call()]},
        ]
    )

    run = deliver(run.pk, provider, tools)
    assert run.status == "waiting_children"
    child = micro_child_of(run)
    drain(queued_runs, provider, tools)

    run.refresh_from_db()
    assert (run.kind, run.status) == ("contract", "succeeded"), (
        run.error_code,
        run.error_message,
    )
    assert Run.objects.get(pk=child.pk).status == "succeeded"
    answered_call(run)


def test_cancelling_the_parent_cancels_its_micro_agent(owner, queued_runs):
    tools = registry()
    provider = ScriptedProvider(
        [REVIEWER, PLAN, {"match": "AGENTDESK:STEP", "replies": [micro_call()]}]
    )
    run = deliver(make_run(owner, "Get the notes reviewed", fast_path=False).pk, provider, tools)
    child = micro_child_of(run)
    assert run.status == "waiting_children"

    run_cancel(run=run, actor=owner, interface="api")

    run.refresh_from_db()
    child.refresh_from_db()
    assert run.status == "cancelled"
    assert (child.status, child.error_code) == ("cancelled", "CANCELLED")


def test_a_micro_agent_deeper_than_the_tree_allows_is_refused_as_the_calls_answer(
    owner, queued_runs, settings
):
    settings.TEAM_MAX_DEPTH = 0
    tools = registry()
    provider = ScriptedProvider(
        [
            PLAN,
            {
                "match": "AGENTDESK:STEP",
                "replies": [micro_call(), tool_call("finish_task", result="reviewed it myself")],
            },
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "reviewed it myself")]},
        ]
    )

    run = deliver(make_run(owner, "Get the notes reviewed", fast_path=False).pk, provider, tools)

    assert not Run.objects.filter(parent=run).exists() and queued_runs == []
    (call,) = ToolCall.objects.filter(run=run, tool="start_micro_agent")
    assert call.status == "failed" and "TEAM_MAX_DEPTH" in call.error
    assert run.status == "succeeded", (run.error_code, run.error_message)


def test_stopping_a_contract_agent_cancels_its_micro_agent(
    owner, llm, queued_runs, settings, tmp_path
):
    settings.AGENT_LOG_DIR = tmp_path / "logs"
    tools = registry()
    agent = agent_create(owner=owner, interface="api", contract="Get the notes reviewed.")
    run = agent_start(agent=agent, actor=owner, interface="api")
    provider = ScriptedProvider(
        [REVIEWER, {"match": "AGENTDESK:CONTRACT", "replies": [micro_call()]}]
    )
    run = deliver(run.pk, provider, tools)
    child = micro_child_of(run)

    agent_stop(agent=agent, actor=owner, interface="api")

    run.refresh_from_db()
    child.refresh_from_db()
    assert run.status == "cancelled"
    assert child.status == "cancelled"


def test_a_parent_paused_and_resumed_while_its_micro_agent_works_waits_for_it_again(
    owner, queued_runs
):
    tools = registry()
    provider = ScriptedProvider(
        [
            REVIEWER,
            PLAN,
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [micro_call(), {"content": f"The reviewer says {FOUND}."}],
            },
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, FOUND, evidence=[1])]},
        ]
    )
    run = deliver(make_run(owner, "Get the notes reviewed", fast_path=False).pk, provider, tools)
    child = micro_child_of(run)
    queued_runs.clear()
    run_pause(run=run, actor=owner, interface="api")
    run_resume(run=run, actor=owner, interface="api")
    asked = len(provider.requests)

    run = deliver(run.pk, provider, tools)

    # Not started again: it waits for the micro agent it has.
    assert run.status == "waiting_children" and len(provider.requests) == asked
    assert Run.objects.filter(parent=run).count() == 1
    queued_runs[:] = [q for q in queued_runs if q != run.pk]
    deliver(child.pk, provider, tools)
    drain(queued_runs, provider, tools)
    run.refresh_from_db()
    assert run.status == "succeeded", (run.error_code, run.error_message)
    answered_call(run)


def test_the_same_task_given_to_a_second_micro_agent_is_refused_as_a_repeat(owner, queued_runs):
    tools = registry()
    provider = ScriptedProvider(
        [
            REVIEWER,
            PLAN,
            {
                "match": "AGENTDESK:STEP 0",
                # The same task again, asked otherwise (the very same call is not made twice).
                "replies": [
                    micro_call(),
                    tool_call(
                        "start_micro_agent", task="Review the notes in notes.txt", persona="Other."
                    ),
                    {"content": f"Reviewed: {FOUND}."},
                ],
            },
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, FOUND, evidence=[1])]},
        ]
    )
    run = deliver(make_run(owner, "Get the notes reviewed", fast_path=False).pk, provider, tools)
    drain(queued_runs, provider, tools)

    run.refresh_from_db()
    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert Run.objects.filter(parent=run).count() == 1
    first, second = ToolCall.objects.filter(run=run, tool="start_micro_agent").order_by("pk")
    assert first.status == "succeeded"
    assert second.status == "failed" and "same task" in second.error
