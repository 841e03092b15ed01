"""A plan whose steps name what they need (`parallel`): the steps that need nothing unfinished
run side by side in the worker holding the lease, against the scripted server's timed answers;
one that waits for a person parks alone until none of the others can run."""

import json
import threading

import pytest
from django.db import connections

from agents_app.approvals.decisions import approval_decide
from agents_app.models import Approval, Plan, Run, RunEvent, Step
from agents_app.runs.services import run_cancel
from agents_app.worker.execution import execute_run
from tests.support.runs import make_run
from tests.support.script import step, tool_call, verdict
from tests.support.tools import FinishTool, make_registry
from tests.support.waiting import wait_for
from tools_app.builtin import MicroAgentTool

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dialect]

SLOW = 2.0  # seconds each of the three independent steps' model answer takes


def plan_of(*steps, parallel=True):
    return {
        "content": json.dumps({"steps": list(steps), **({"parallel": True} if parallel else {})})
    }


def three_then_one(step_1_replies, *, parallel=True, delay=SLOW, sends=False):
    return [
        {
            "match": "AGENTDESK:PLAN",
            "replies": [
                plan_of(
                    step("look up the weather"),
                    step("look up the news", ["send"] if sends else []),
                    step("look up the traffic"),
                    step("sum it up", [], [0, 1, 2]),
                    parallel=parallel,
                )
            ],
        },
        {"match": "AGENTDESK:STEP 0", "replies": [{"content": "sunny", "delay": delay}]},
        {"match": "AGENTDESK:STEP 1", "replies": step_1_replies},
        {"match": "AGENTDESK:STEP 2", "replies": [{"content": "jammed", "delay": delay}]},
        {"match": "AGENTDESK:STEP 3", "replies": [{"content": "sunny, quiet, jammed"}]},
        {
            "match": "AGENTDESK:VERIFY",
            "replies": [verdict(True, "sunny, quiet, jammed", evidence=[1] if sends else [])],
        },
    ]


def gapless(run) -> list[str]:
    """The run's event types, after checking their seqs are 1..n without a hole."""
    events = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", "type"))
    assert [seq for seq, _ in events] == list(range(1, len(events) + 1))
    assert Run.objects.get(pk=run.pk).event_seq == len(events)
    return [type for _, type in events]


def answered(llm, marker):
    """[came, answered] of the one request whose messages hold `marker`."""
    (span,) = [(came, done) for text, came, done in llm.timeline if marker in text]
    return span


def test_three_independent_two_second_steps_and_their_dependent_take_one_step_s_time(llm, owner):
    llm.script(three_then_one([{"content": "quiet", "delay": SLOW}]))
    run = make_run(owner, "Tell me about today", fast_path=False)

    execute_run(run.pk, registry=make_registry(FinishTool()))

    run.refresh_from_db()
    assert run.status == "succeeded", (run.error_code, run.error_message)
    steps = list(Step.objects.filter(plan__run=run).order_by("index"))
    assert [s.status for s in steps] == ["completed"] * 4
    assert [s.output for s in steps] == ["sunny", "quiet", "jammed", "sunny, quiet, jammed"]
    # The three slow answers overlap; their dependent starts after the last of them.
    spans = [answered(llm, f"AGENTDESK:STEP {i}\n") for i in range(3)]
    assert max(came for came, _ in spans) < min(done for _, done in spans)
    assert answered(llm, "AGENTDESK:STEP 3\n")[0] >= max(done for _, done in spans)
    assert steps[3].started_at >= max(s.finished_at for s in steps[:3])
    step_time = (steps[3].finished_at - min(s.started_at for s in steps)).total_seconds()
    assert step_time <= 1.5 * SLOW, f"the four steps took {step_time:.2f} s"
    types = gapless(run)
    assert types.count("step_started") == 4 and types.count("step_completed") == 4


def test_a_step_waiting_for_approval_parks_alone_while_its_siblings_finish(llm, owner, send):
    llm.script(
        three_then_one(
            [tool_call("send", to="ann", text="news?"), {"content": "quiet"}], sends=True
        )
    )
    run = make_run(owner, "Tell me about today", fast_path=False)
    registry = make_registry(send, FinishTool())

    execute_run(run.pk, registry=registry)

    run.refresh_from_db()
    assert run.status == "waiting_approval" and run.lease_owner == ""
    statuses = dict(Step.objects.filter(plan__run=run).values_list("index", "status"))
    # Its siblings finished while it waited; their dependent waits for it.
    assert statuses == {0: "completed", 1: "running", 2: "completed", 3: "pending"}
    approval = Approval.objects.get(run=run)
    assert approval.step.index == 1 and send.calls == []
    types = gapless(run)
    assert types.count("approval_required") == 1 and types[-1] == "run_status"

    approval_decide(approval_id=approval.pk, decision="approve", actor=owner, interface="web")
    execute_run(run.pk, registry=registry)

    run.refresh_from_db()
    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert send.calls == [{"to": "ann", "text": "news?"}]
    steps = list(Step.objects.filter(plan__run=run).order_by("index"))
    assert [s.status for s in steps] == ["completed"] * 4
    assert steps[1].retry_count == 0  # continued where it stopped, not started over
    gapless(run)


def test_a_plan_that_does_not_say_parallel_runs_its_steps_one_after_another(llm, owner):
    llm.script(three_then_one([{"content": "quiet", "delay": 0.3}], parallel=False, delay=0.3))
    run = make_run(owner, "Tell me about today", fast_path=False)

    execute_run(run.pk, registry=make_registry(FinishTool()))

    run.refresh_from_db()
    assert run.status == "succeeded", (run.error_code, run.error_message)
    spans = [answered(llm, f"AGENTDESK:STEP {i}\n") for i in range(4)]
    assert all(spans[i][1] <= spans[i + 1][0] for i in range(3))
    assert "parallel" not in Plan.objects.get(run=run).raw
    gapless(run)


def test_a_cancel_while_steps_run_side_by_side_ends_the_run_once_each_stopped(llm, owner):
    held = {"content": "late", "hold": "cancelled"}
    script = three_then_one([held])
    script[1]["replies"] = script[3]["replies"] = [held]
    llm.script(script)
    run = make_run(owner, "Tell me about today", fast_path=False)

    def work():
        try:
            execute_run(run.pk, registry=make_registry(FinishTool()))
        finally:
            connections.close_all()

    worker = threading.Thread(target=work)
    worker.start()
    try:
        wait_for(lambda: sum(1 for _, _, done in llm.timeline if done is None) == 3, timeout=30)
        run_cancel(run=Run.objects.get(pk=run.pk), actor=owner, interface="web")
    finally:
        llm.release("cancelled")
        worker.join(60)

    run.refresh_from_db()
    assert run.status == "cancelled" and run.lease_owner == ""
    statuses = dict(Step.objects.filter(plan__run=run).values_list("index", "status"))
    assert statuses[3] in ("pending", "skipped", "cancelled") and statuses[3] != "completed"
    assert not any(s == "running" for s in statuses.values()), statuses
    assert not any("AGENTDESK:STEP 3\n" in text for text, _, _ in llm.timeline)
    gapless(run)


def test_a_step_calling_a_micro_agent_starts_it_once_its_siblings_ended(llm, owner, queued_runs):
    persona = "You are a careful reviewer of notes."
    micro = tool_call("start_micro_agent", task="Review the notes", persona=persona, max_steps=3)
    llm.script(
        [
            {"match": persona, "replies": [tool_call("finish_task", result="fine")]},
            {
                "match": "AGENTDESK:PLAN",
                "replies": [
                    plan_of(
                        step("have the notes reviewed", ["start_micro_agent"]),
                        step("look up the news"),
                        step("sum it up", [], [0, 1]),
                    )
                ],
            },
            {"match": "AGENTDESK:STEP 0", "replies": [micro, {"content": "reviewed: fine"}]},
            {"match": "AGENTDESK:STEP 1", "replies": [{"content": "quiet", "delay": 1.0}]},
            {"match": "AGENTDESK:STEP 2", "replies": [{"content": "fine and quiet"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "fine", evidence=[1])]},
        ]
    )
    run = make_run(owner, "Tell me about today", fast_path=False)
    tools = make_registry(FinishTool(), MicroAgentTool())

    execute_run(run.pk, registry=tools)

    run.refresh_from_db()
    assert run.status == "waiting_children", (run.error_code, run.error_message)
    statuses = dict(Step.objects.filter(plan__run=run).values_list("index", "status"))
    assert statuses == {0: "running", 1: "completed", 2: "pending"}
    (child,) = Run.objects.filter(parent=run)
    assert child.kind == "micro"
    while queued_runs:
        execute_run(queued_runs.pop(0), registry=tools)

    run.refresh_from_db()
    assert run.status == "succeeded", (run.error_code, run.error_message)
    outputs = list(Step.objects.filter(plan__run=run).order_by("index").values_list("output"))
    assert outputs == [("reviewed: fine",), ("quiet",), ("fine and quiet",)]
    gapless(run)
