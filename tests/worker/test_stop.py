"""Stop (seed 002): a cancel during a streaming answer closes the stream at its next chunk, no
new LLM request is made, and the run ends cancelled with its history intact."""

import pytest
from django.test import Client

from agents_app.models import AuditEvent, Run, RunEvent, Step
from agents_app.runs.services import task_submit
from tests.support.script import asked, plan_reply, step, verdict
from tests.support.waiting import wait_for, wait_for_run

pytestmark = pytest.mark.integration


def test_stop_during_a_streaming_answer(llm, start_worker, owner, api_key_for):
    # The answer would stream for 30 s; a cancel closes the stream at its next chunk.
    slow = {"chunks": [f"word{i} " for i in range(120)], "chunk_delay": 0.25}
    llm.script(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("talk"), step("more"))]},
            {"match": "AGENTDESK:STEP 0", "replies": [slow]},
            {"match": "AGENTDESK:STEP 1", "replies": [{"content": "never asked"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "never")]},
        ]
    )
    start_worker()
    run = task_submit(owner=owner, interface="api", text="Talk slowly")
    wait_for(lambda: asked(llm, "AGENTDESK:STEP 0"), 60, message="the step's request")
    requests_at_stop = len(llm.requests)
    response = Client().post(
        f"/api/v1/runs/{run.pk}/cancel", HTTP_AUTHORIZATION=api_key_for(owner).decode()
    )
    assert response.status_code in (200, 202), response.content
    # The answer in flight is still streaming when the stop arrives.
    assert Run.objects.get(pk=run.pk).status == "running"

    run = wait_for_run(run.pk, 10)
    # From the cancel's commit to the run's end, by the rows' own clocks.
    requested = RunEvent.objects.get(run=run, type="cancel_requested").created_at
    assert (run.finished_at - requested).total_seconds() < 1.0
    assert run.status == "cancelled" and run.error_code == "CANCELLED"
    assert len(llm.requests) == requests_at_stop  # nothing asked after the stop
    assert not asked(llm, "AGENTDESK:STEP 1") and not asked(llm, "AGENTDESK:VERIFY")
    steps = list(Step.objects.filter(run=run).order_by("index"))
    # The answer in flight was cut off, not waited for; nothing after it ran.
    assert [s.status for s in steps] == ["cancelled", "skipped"]
    assert steps[0].error.startswith("CANCELLED") and steps[0].output == ""
    types = list(RunEvent.objects.filter(run=run).values_list("type", flat=True))
    assert types[:2] == ["run_queued", "run_status"]
    assert "plan_created" in types and "step_started" in types and "cancel_requested" in types
    assert types[-1] == "result"
    seqs = list(RunEvent.objects.filter(run=run).values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))
    cancel = AuditEvent.objects.get(run_id=run.pk, action="run.cancel")
    assert (cancel.actor_label, cancel.interface) == ("owner", "api")
