"""A model call that fails and is tried again leaves an event saying why and when, through a
real worker and the scripted LLM server, so a run waiting on its model does not look stuck."""

import pytest

from agents_app.models import RunEvent
from agents_app.tasks import execute_run
from agents_app.web.run_page import event_summary
from tests.support.runs import make_run
from tests.support.script import plan_reply, step, verdict
from tests.support.waiting import wait_for_run

pytestmark = pytest.mark.integration


def test_a_rate_limited_planner_call_is_retried_and_the_retry_is_an_event(
    llm, shared_worker, owner
):
    llm.script(
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [
                    {"status": 429, "error": "slow down"},
                    plan_reply(step("answer", ["finish_task"])),
                ],
            },
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [
                    {"tool_calls": [{"name": "finish_task", "arguments": {"result": "4"}}]}
                ],
            },
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "4", evidence=[])]},
        ]
    )
    run = make_run(owner, "What is 2+2?", fast_path=False)
    execute_run.delay(run.pk)
    run = wait_for_run(run.pk)

    retries = list(RunEvent.objects.filter(run=run, type="llm_retry"))
    assert len(retries) == 1
    notice = retries[0].payload
    assert (notice["code"], notice["attempt"], notice["step_index"]) == ("RATE_LIMITED", 2, None)
    # What the server said is staff's (on the connection, and in the log), not the run's.
    assert notice["reason"] == "the LLM server is rate limiting us"
    said = event_summary({"event_type": "llm_retry", "payload": notice})
    assert said.startswith("LLM call failed (RATE_LIMITED: the LLM server is rate limiting us")
    assert f"retrying in {notice['delay']:g} s (attempt 2 of {notice['attempts']})" in said
    planned = RunEvent.objects.get(run=run, type="plan_created")
    assert retries[0].seq < planned.seq
