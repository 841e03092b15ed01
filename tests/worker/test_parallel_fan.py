"""What the steps of a parallel plan share (worker.parallel, issue 33): the run's budgets, its
usage, the micro agents they call for, and a person's decision on one of them while the
others run."""

import threading

import pytest
from django.db import connections

from agents_app.approvals.decisions import approval_decide
from agents_app.models import Approval, Run, Step, ToolCall
from agents_app.runs.services import run_pause, run_resume
from agents_app.worker.execution import execute_run
from tests.support.fan import gapless, plan_of, usage_heard
from tests.support.runs import make_run
from tests.support.script import step, tool_call, verdict
from tests.support.tools import EchoTool, FinishTool, make_registry
from tests.support.waiting import wait_for
from tools_app.builtin import MicroAgentTool

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dialect]

TEN = {"prompt_tokens": 5, "completion_tokens": 5}


def echo(text, **reply):
    return {**tool_call("echo", text=text), **reply}


def test_the_tool_call_budget_holds_for_the_run_across_its_steps(llm, owner):
    # Four steps call tools at the same moment while a fifth ends and starts three more.
    meet = {"name": "calls", "parties": 5, "timeout": 10}
    rules = [
        {
            "match": "AGENTDESK:PLAN",
            "replies": [
                plan_of(
                    *[step(f"echo batch {i}", ["echo"]) for i in range(4)],
                    step("say go"),
                    *[step(f"echo more {i}", ["echo"], [4]) for i in range(3)],
                )
            ],
        },
        *[
            {
                "match": f"AGENTDESK:STEP {i}\n",
                "replies": [echo(f"{i}a", meet=meet), echo(f"{i}b"), echo(f"{i}c")],
            }
            for i in range(4)
        ],
        {"match": "AGENTDESK:STEP 4\n", "replies": [{"content": "go", "meet": meet}]},
        *[
            {"match": f"AGENTDESK:STEP {i}\n", "replies": [echo(f"{i}a"), echo(f"{i}b")]}
            for i in range(5, 8)
        ],
    ]
    llm.script(rules)
    run = make_run(owner, "Echo in batches", fast_path=False, max_tool_calls=7)

    execute_run(run.pk, registry=make_registry(EchoTool(), FinishTool()))

    run.refresh_from_db()
    assert run.status == "failed" and run.error_code == "BUDGET_EXCEEDED", run.error_message
    calls = ToolCall.objects.filter(run=run).count()
    assert calls == run.tool_calls_made == 7
    assert run.total_tokens == usage_heard(run)
    gapless(run)


def test_the_token_budget_holds_for_the_run_across_its_steps(llm, owner):
    # Each step alone stays within the budget; together they pass it, and each has heard
    # its answers before any of them ended.
    first = {"name": "first", "parties": 3, "timeout": 10}
    second = {"name": "second", "parties": 3, "timeout": 3}
    llm.script(
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [
                    {
                        **plan_of(*[step(f"echo {i}", ["echo"]) for i in range(3)]),
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1},
                    }
                ],
            },
            *[
                {
                    "match": f"AGENTDESK:STEP {i}\n",
                    "replies": [
                        echo(str(i), usage=TEN, meet=first),
                        {"content": f"echoed {i}", "usage": TEN, "meet": second},
                    ],
                }
                for i in range(3)
            ],
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "echoed")]},
        ]
    )
    run = make_run(owner, "Echo thrice", fast_path=False, max_tokens=25)

    execute_run(run.pk, registry=make_registry(EchoTool(), FinishTool()))

    run.refresh_from_db()
    assert run.status == "failed" and run.error_code == "BUDGET_EXCEEDED", run.status
    # Every answer heard is counted, its llm_usage event with it.
    assert run.total_tokens == usage_heard(run)
    assert not any("AGENTDESK:VERIFY" in text for text, _, _ in llm.timeline)
    gapless(run)


def two_micro_agents(llm):
    """Steps 0 and 1 call for micro agents, step 2 answers, step 3 needs the three."""
    rules = [
        {
            "match": "You are a reviewer of notes.",
            "replies": [tool_call("finish_task", result="notes fine")],
        },
        {
            "match": "You are a reviewer of sums.",
            "replies": [tool_call("finish_task", result="sums fine")],
        },
        {
            "match": "AGENTDESK:PLAN",
            "replies": [
                plan_of(
                    step("have the notes reviewed", ["start_micro_agent"]),
                    step("have the sums reviewed", ["start_micro_agent"]),
                    step("look up the news"),
                    step("sum it up", [], [0, 1, 2]),
                )
            ],
        },
        *[
            {
                "match": f"AGENTDESK:STEP {i}\n",
                "replies": [
                    tool_call(
                        "start_micro_agent",
                        task=f"Review the {what}",
                        persona=f"You are a reviewer of {what}.",
                        max_steps=3,
                    ),
                    {"content": f"{what} fine"},
                ],
            }
            for i, what in ((0, "notes"), (1, "sums"))
        ],
        {"match": "AGENTDESK:STEP 2\n", "replies": [{"content": "quiet"}]},
        {"match": "AGENTDESK:STEP 3\n", "replies": [{"content": "all fine and quiet"}]},
        {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "all fine", evidence=[1, 2])]},
    ]
    llm.script(rules)


def parent_requests(llm) -> int:
    return sum(1 for text, _, _ in llm.timeline if "You are a reviewer of" not in text)


def test_steps_calling_for_micro_agents_start_them_all_and_keep_what_they_heard(
    llm, owner, queued_runs
):
    two_micro_agents(llm)
    run = make_run(owner, "Review my notes and sums", fast_path=False)
    tools = make_registry(FinishTool(), MicroAgentTool())

    execute_run(run.pk, registry=tools)

    run.refresh_from_db()
    assert run.status == "waiting_children", (run.error_code, run.error_message)
    assert Run.objects.filter(parent=run, kind="micro").count() == 2
    # The answers the two steps heard before their calls are counted (18 tokens each).
    assert run.total_tokens == usage_heard(run) == 18 * parent_requests(llm)
    while queued_runs:
        execute_run(queued_runs.pop(0), registry=tools)

    run.refresh_from_db()
    assert run.status == "succeeded", (run.error_code, run.error_message)
    steps = list(Step.objects.filter(plan__run=run).order_by("index"))
    assert [s.output for s in steps][:3] == ["notes fine", "sums fine", "quiet"]
    assert [s.retry_count for s in steps] == [0, 0, 0, 0]  # none ran again
    children = sum(child.total_tokens for child in Run.objects.filter(parent=run))
    assert run.total_tokens == usage_heard(run)
    assert run.total_tokens + children == 18 * len(llm.timeline)
    assert run.tool_calls_made == ToolCall.objects.filter(run=run).count() == 2
    gapless(run)


def test_steps_finding_their_micro_agents_working_park_the_run_once_both_looked(
    llm, owner, queued_runs
):
    two_micro_agents(llm)
    run = make_run(owner, "Review my notes and sums", fast_path=False)
    tools = make_registry(FinishTool(), MicroAgentTool())
    execute_run(run.pk, registry=tools)
    # Paused and resumed while its micro agents wait their turn: it is queued again.
    run_pause(run=Run.objects.get(pk=run.pk), actor=owner, interface="web")
    run_resume(run=Run.objects.get(pk=run.pk), actor=owner, interface="web")
    assert Run.objects.get(pk=run.pk).status == "running"

    outcome = execute_run(run.pk, registry=tools)

    run.refresh_from_db()
    assert outcome.state == "finished"  # no step lost the lease to a sibling parking the run
    assert run.status == "waiting_children" and run.lease_owner == ""
    statuses = dict(Step.objects.filter(plan__run=run).values_list("index", "status"))
    assert statuses == {0: "running", 1: "running", 2: "completed", 3: "pending"}
    for child in Run.objects.filter(parent=run):
        execute_run(child.pk, registry=tools)
    while queued_runs:
        execute_run(queued_runs.pop(0), registry=tools)

    run.refresh_from_db()
    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert Run.objects.filter(parent=run).count() == 2
    gapless(run)


def held_beside_siblings(llm):
    """Step 1 calls `send` (a person decides); steps 0 and 2 answer once released ("go");
    step 3 needs 0 and 2, step 4 needs 1."""
    held = {"content": "done", "hold": "go"}
    llm.script(
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [
                    plan_of(
                        step("look up the weather"),
                        step("send the news", ["send"]),
                        step("look up the traffic"),
                        step("sum it up", [], [0, 2]),
                        step("follow up the news", [], [1]),
                    )
                ],
            },
            {"match": "AGENTDESK:STEP 0\n", "replies": [held]},
            {"match": "AGENTDESK:STEP 1\n", "replies": [tool_call("send", to="ann", text="hi")]},
            {"match": "AGENTDESK:STEP 2\n", "replies": [held]},
            {"match": "AGENTDESK:STEP 3\n", "replies": [{"content": "sunny, jammed"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "sunny, jammed")]},
        ]
    )


def decide_while_siblings_run(llm, owner, send, decision, then=None):
    """Run the plan in a worker thread; decide step 1's approval while steps 0 and 2 are held
    in their model calls; `then` (a condition) must hold before they are released."""
    run = make_run(owner, "Tell me about today", fast_path=False)
    registry = make_registry(send, FinishTool())

    def work():
        try:
            execute_run(run.pk, registry=registry)
        finally:
            connections.close_all()

    worker = threading.Thread(target=work)
    worker.start()
    try:
        approval = wait_for(lambda: Approval.objects.filter(run=run).first(), timeout=30)
        wait_for(lambda: sum(1 for _, _, done in llm.timeline if done is None) == 2, timeout=30)
        approval_decide(approval_id=approval.pk, decision=decision, actor=owner, interface="web")
        if then is not None:
            wait_for(lambda: then(run), timeout=30, message="the decision to take effect")
    finally:
        llm.release("go")
        worker.join(60)
    assert not worker.is_alive()
    run.refresh_from_db()
    return run


def test_a_cancel_decided_while_siblings_run_cancels_the_run(llm, owner, send):
    held_beside_siblings(llm)

    run = decide_while_siblings_run(llm, owner, send, "cancel")

    assert run.status == "cancelled" and run.lease_owner == "", (run.status, run.error_message)
    statuses = dict(Step.objects.filter(plan__run=run).values_list("index", "status"))
    assert statuses[1] == "cancelled"
    assert "running" not in statuses.values() and "completed" not in (statuses[3], statuses[4])
    assert send.calls == [] and Approval.objects.get(run=run).status == "cancelled"
    assert sum(1 for text, _, _ in llm.timeline if "AGENTDESK:STEP 1\n" in text) == 1
    gapless(run)


def test_a_skip_decided_while_siblings_run_skips_the_step_and_the_run_goes_on(llm, owner, send):
    held_beside_siblings(llm)

    def skipped(run):
        return Step.objects.get(plan__run=run, index=1).status == "skipped"

    run = decide_while_siblings_run(llm, owner, send, "skip", then=skipped)

    assert run.status == "succeeded", (run.error_code, run.error_message)
    steps = list(Step.objects.filter(plan__run=run).order_by("index"))
    assert [s.status for s in steps] == [
        "completed",
        "skipped",
        "completed",
        "completed",
        "skipped",
    ]
    assert steps[1].retry_count == 0 and send.calls == []
    assert sum(1 for text, _, _ in llm.timeline if "AGENTDESK:STEP 1\n" in text) == 1
    assert Approval.objects.get(run=run).status == "skipped"
    gapless(run)
