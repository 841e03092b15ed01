"""The fast path through a real Celery worker and the scripted LLM server: a short task runs as
one direct step (AGENTDESK:DIRECT) with no planner or verifier request, and is still a run like
any other: its events, cancel, plan approval, and the planner when the direct attempt fails."""

import json

import pytest

from agents_app.models import Approval, Plan, Run, RunEvent, Step
from tests.support.api import post_json, submit
from tests.support.approvals import decide
from tests.support.script import asked, plan_reply, step, tool_call, verdict
from tests.support.waiting import wait_for, wait_for_run

pytestmark = pytest.mark.integration

HELLO = {"path": "hello.txt", "content": "hello\n"}
DIRECT = {
    "match": "AGENTDESK:DIRECT",
    "replies": [tool_call("write_file", **HELLO), tool_call("finish_task", result="hello.txt")],
}


def markers(llm) -> list[str]:
    """The phase marker of each request the scripted server received, in order."""
    return [body["messages"][0]["content"].splitlines()[0] for body in llm.requests]


def run_of(response) -> int:
    assert response.status_code == 202, response.content
    return response.json()["run_id"]


def test_a_short_task_succeeds_in_one_step_with_no_plan_or_verify_request(
    llm, start_worker, owner_api, settings
):
    llm.script([DIRECT])
    start_worker(AGENT_FAST_PATH_MAX_CHARS="100")
    run = wait_for_run(run_of(submit(owner_api, task="Write hello to hello.txt")))

    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert run.final_response == "hello.txt"
    assert (settings.WORKSPACE_ROOT / f"run-{run.pk}" / "hello.txt").read_text() == "hello\n"
    assert markers(llm) == ["AGENTDESK:DIRECT", "AGENTDESK:DIRECT"]
    assert not asked(llm, "AGENTDESK:PLAN") and not asked(llm, "AGENTDESK:VERIFY")
    plan = Plan.objects.get(run=run)
    assert plan.raw["fast_path"] is True
    assert [s.status for s in Step.objects.filter(run=run)] == ["completed"]
    # The events of a normal run: nothing missing, nothing new but the plan's mark.
    types = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("type", flat=True))
    assert types.count("llm_usage") == 2  # one per model answer, as in every run
    assert [t for t in types if t != "llm_usage"] == [
        "run_queued",
        "run_status",  # planning
        "plan_created",
        "run_status",  # running
        "progress_update",
        "step_started",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "step_completed",
        "progress_update",
        "run_status",  # verifying
        "verification",
        "run_status",  # succeeded
        "result",
    ]
    detail = owner_api.get(f"/api/v1/runs/{run.pk}").json()
    assert detail["fast_path"] is None  # the setting decided
    assert [c["tool"] for c in detail["plans"][0]["steps"][0]["tool_calls"]] == [
        "write_file",
        "finish_task",
    ]


def test_a_task_asking_for_the_fast_path_takes_it_with_the_setting_off(
    llm, shared_worker, owner_api
):
    llm.script([DIRECT])
    run = wait_for_run(run_of(submit(owner_api, task="Write hello to hello.txt", fast_path=True)))

    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert markers(llm) == ["AGENTDESK:DIRECT", "AGENTDESK:DIRECT"]


def test_a_task_refusing_the_fast_path_is_planned_whatever_the_setting(
    llm, start_worker, owner_api
):
    llm.script(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("write", ["write_file"]))]},
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [tool_call("write_file", **HELLO), {"content": "wrote it"}],
            },
            {
                "match": "AGENTDESK:VERIFY",
                "replies": [verdict(True, "hello.txt written", evidence=[1])],
            },
            DIRECT,
        ]
    )
    start_worker(AGENT_FAST_PATH_MAX_CHARS="100000")
    run = wait_for_run(run_of(submit(owner_api, task="Write hello to hello.txt", fast_path=False)))

    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert not asked(llm, "AGENTDESK:DIRECT")
    assert markers(llm) == [
        "AGENTDESK:PLAN",
        "AGENTDESK:STEP 0",
        "AGENTDESK:STEP 0",
        "AGENTDESK:VERIFY",
    ]


def test_a_direct_step_that_fails_falls_back_to_a_full_plan(
    llm, shared_worker, owner_api, settings
):
    llm.script(
        [
            # The direct attempt names no file: write_file's arguments are invalid.
            {"match": "AGENTDESK:DIRECT", "replies": [tool_call("write_file", content="hi")]},
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("write", ["write_file"]))]},
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [tool_call("write_file", **HELLO), {"content": "wrote it"}],
            },
            {
                "match": "AGENTDESK:VERIFY",
                "replies": [verdict(True, "hello.txt written", evidence=[2])],
            },
        ]
    )
    run = wait_for_run(run_of(submit(owner_api, task="Write hello to hello.txt", fast_path=True)))

    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert run.replans == 1 and run.final_response == "hello.txt written"
    assert markers(llm) == [
        "AGENTDESK:DIRECT",
        "AGENTDESK:PLAN",
        "AGENTDESK:STEP 0",
        "AGENTDESK:STEP 0",
        "AGENTDESK:VERIFY",
    ]
    replanned = RunEvent.objects.get(run=run, type="replanned").payload
    assert replanned["reason"].startswith("the direct attempt did not finish: INVALID_ARGUMENTS"), (
        replanned
    )
    plan_request = next(b for b in llm.requests if "AGENTDESK:PLAN" in json.dumps(b["messages"]))
    assert "the direct attempt did not finish" in plan_request["messages"][1]["content"]
    first, second = Plan.objects.filter(run=run).order_by("version")
    assert first.raw["fast_path"] is True and "fast_path" not in second.raw
    assert (settings.WORKSPACE_ROOT / f"run-{run.pk}" / "hello.txt").read_text() == "hello\n"


def test_cancel_during_the_direct_step_ends_the_run_cancelled(llm, shared_worker, owner_api):
    slow = {"chunks": [f"word{i} " for i in range(12)], "chunk_delay": 0.25}
    llm.script([{"match": "AGENTDESK:DIRECT", "replies": [slow]}])
    run_id = run_of(submit(owner_api, task="Talk slowly", fast_path=True))
    wait_for(lambda: asked(llm, "AGENTDESK:DIRECT"), 60, message="the direct step's request")

    response = post_json(owner_api, f"/api/v1/runs/{run_id}/cancel")
    assert response.status_code in (200, 202), response.content
    run = wait_for_run(run_id)

    assert (run.status, run.error_code) == ("cancelled", "CANCELLED")
    assert markers(llm) == ["AGENTDESK:DIRECT"]
    assert "verification" not in RunEvent.objects.filter(run=run).values_list("type", flat=True)


def test_plan_approval_parks_a_fast_path_run_before_its_step(llm, shared_worker, owner_api):
    llm.script([DIRECT])
    run_id = run_of(
        submit(owner_api, task="Write hello to hello.txt", fast_path=True, approve_plan=True)
    )
    wait_for(
        lambda: Run.objects.get(pk=run_id).status == "waiting_approval",
        60,
        message="the run to wait for its plan's approval",
    )
    approval = Approval.objects.get(run_id=run_id)
    assert approval.kind == "plan"
    assert [s["objective"] for s in approval.arguments["steps"]] == ["Write hello to hello.txt"]
    assert llm.requests == []  # nothing asked of the model before the person's go

    assert decide(owner_api, approval.pk, decision="approve").status_code == 200
    run = wait_for_run(run_id)
    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert markers(llm) == ["AGENTDESK:DIRECT", "AGENTDESK:DIRECT"]
