import pytest

from agents_app.models import Run, Step
from agents_app.runs.control import kill_switch_set
from agents_app.tasks import execute_run
from tests.support.runs import make_run
from tests.support.script import plan_reply, step, verdict
from tests.support.waiting import wait_for, wait_for_run

pytestmark = pytest.mark.integration


def test_a_worker_pauses_a_run_and_any_worker_resumes_it_after_release(
    llm, start_worker, owner, superuser
):
    llm.script(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("a"), step("b"))]},
            {"match": "AGENTDESK:STEP 0", "replies": [{"content": "a done", "delay": 1.5}]},
            {"match": "AGENTDESK:STEP 1", "replies": [{"content": "b done"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "both")]},
        ]
    )
    start_worker()
    run = make_run(owner)
    execute_run.delay(run.pk)
    wait_for(lambda: Step.objects.filter(run=run, index=0, status="running").exists(), 30)
    kill_switch_set(engaged=True, actor=superuser, interface="admin", reason="drill")
    wait_for(lambda: Run.objects.get(pk=run.pk).status == "paused", 30, message="paused")
    paused = Run.objects.get(pk=run.pk)
    assert paused.lease_owner == ""  # parked: no worker holds it
    assert [s.status for s in Step.objects.filter(run=run).order_by("index")] == [
        "completed",
        "pending",
    ]

    kill_switch_set(engaged=False, actor=superuser, interface="admin")
    run = wait_for_run(run.pk, 60)
    assert run.status == "succeeded" and run.final_response == "both"
