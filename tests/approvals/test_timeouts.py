"""Approval timeouts through a real Celery worker: nobody decides, the `expire_approval` task
the parking scheduled fires on the same queue and decides by the task's strategy; a worker
coming up, and every running worker on a timer, decide what a lost timer missed."""

import json

import pytest

from agents_app.models import Approval, AuditEvent, Run, Step, Task, ToolCall
from agents_app.runs.services import run_create
from agents_app.worker import execution
from tests.support.approvals import make_tool_ask, queue_task, script_a_write
from tests.support.waiting import wait_for_run

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("write_file_asks")]


@pytest.fixture
def write_file_asks(transactional_db):
    """Staff made the builtin write_file moderate: a call asks unless a rule allows it."""
    make_tool_ask("moderate")


def step_requests(llm, index=0):
    marker = f"AGENTDESK:STEP {index}"
    return [b for b in llm.requests if marker in json.dumps(b["messages"])]


def llm_asked_to_verify(llm) -> bool:
    return any("AGENTDESK:VERIFY" in json.dumps(b["messages"]) for b in llm.requests)


def assert_expired_by_the_worker(run, status):
    approval = Approval.objects.get(run=run)
    assert (approval.status, approval.expired) == (status, True)
    assert (approval.decided_by, approval.decided_via) == (None, "worker")
    assert approval.decided_at >= approval.expires_at
    audit = {
        e.action: e
        for e in AuditEvent.objects.filter(
            run_id=run.pk, action__in=["approval.request", "approval.decide"]
        )
    }
    assert audit["approval.request"].actor_label == "worker"
    decide = audit["approval.decide"]
    assert (decide.actor_label, decide.interface) == ("worker", "worker")
    assert decide.details["expired"] is True and decide.details["approval_id"] == approval.pk
    return approval


def test_an_expired_deny_tells_the_model_and_the_run_goes_on(llm, shared_worker, owner):
    script_a_write(llm, "could not write the notes")

    run = wait_for_run(queue_task(owner, timeout=1, on_timeout="deny").pk, 20)

    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert run.final_response == "could not write the notes"
    assert_expired_by_the_worker(run, "denied")
    assert ToolCall.objects.get(run=run).status == "denied"
    first, second = step_requests(llm)
    told = second["messages"][-1]
    assert told["role"] == "tool" and "denied" in told["content"]


def test_an_expired_skip_skips_the_step(llm, shared_worker, owner):
    script_a_write(llm)

    run = wait_for_run(queue_task(owner, timeout=1, on_timeout="skip").pk, 20)

    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert_expired_by_the_worker(run, "skipped")
    assert Step.objects.get(run=run, index=0).status == "skipped"
    assert ToolCall.objects.get(run=run).status == "skipped"
    # The step's model was asked once, for the call; it never heard of it again.
    assert len(step_requests(llm)) == 1


def test_an_expired_cancel_cancels_the_run(llm, shared_worker, owner):
    script_a_write(llm)

    run = wait_for_run(queue_task(owner, timeout=1, on_timeout="cancel").pk, 20)

    assert (run.status, run.error_code) == ("cancelled", "CANCELLED")
    assert_expired_by_the_worker(run, "cancelled")
    assert len(step_requests(llm)) == 1
    assert not llm_asked_to_verify(llm)


def test_a_worker_coming_up_decides_an_overdue_approval_whose_timer_was_lost(
    llm, start_worker, owner
):
    script_a_write(llm, "could not write the notes")
    # Parked here, by the same engine a worker runs, with no timeout: no timer exists at all.
    run = run_create(task=Task.objects.create(owner=owner, text="Write the notes"))
    execution.execute_run(run.pk)
    assert Run.objects.get(pk=run.pk).status == "waiting_approval"
    approval = Approval.objects.get(run=run)
    assert approval.expires_at is None
    # As if its timer had been lost: due long ago, and nothing in any queue for it.
    Approval.objects.filter(pk=approval.pk).update(
        expires_at=approval.created_at, on_timeout="deny"
    )

    worker = start_worker()

    run = wait_for_run(run.pk, 20)
    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert_expired_by_the_worker(run, "denied")
    assert f"decided 1 overdue approval(s): [{approval.pk}]" in worker.log()


def test_a_running_worker_sweeps_an_overdue_approval_whose_timer_was_lost(llm, start_worker, owner):
    script_a_write(llm, "could not write the notes")
    worker = start_worker(APPROVAL_SWEEP_INTERVAL="1")  # up before the approval exists
    run = run_create(task=Task.objects.create(owner=owner, text="Write the notes"))
    execution.execute_run(run.pk)
    approval = Approval.objects.get(run=run)
    assert (Run.objects.get(pk=run.pk).status, approval.expires_at) == ("waiting_approval", None)
    Approval.objects.filter(pk=approval.pk).update(
        expires_at=approval.created_at, on_timeout="deny"
    )

    run = wait_for_run(run.pk, 20)
    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert_expired_by_the_worker(run, "denied")
    assert f"decided 1 overdue approval(s): [{approval.pk}]" in worker.log()
