"""`approval.required` webhooks through a real Celery worker: a parked run tells the owner's
receiver, signed, retried until it answers; a decision then lets the worker go on."""

import json

import pytest
from django.conf import settings

from agents_app.approvals.decisions import approval_decide
from agents_app.core.errors import DomainError
from agents_app.models import Approval, AuditEvent, Run, ToolCall, WebhookDelivery
from agents_app.webhooks.services import verify_signature, webhook_create
from tests.support.approvals import NOTES, make_tool_ask, queue_task, script_a_write
from tests.support.waiting import wait_for, wait_for_run
from tests.support.webhooks import Receiver

pytestmark = pytest.mark.integration


@pytest.fixture
def flaky_receiver():
    """Answers 500 to the first request, 204 after."""
    receiver = Receiver(fail_first=1).start()
    yield receiver
    receiver.stop()


@pytest.fixture(scope="module")
def module_worker_env():
    """The shared worker may reach the receiver on 127.0.0.1, and retries quickly."""
    return {"WEBHOOK_ALLOW_PRIVATE": "true", "WEBHOOK_RETRY_BASE_DELAY": "0.2"}


def finished_delivery(hook):
    def check():
        delivery = WebhookDelivery.objects.filter(webhook=hook).first()
        return delivery if delivery and delivery.status != "pending" else None

    return wait_for(check, 15, message="the approval.required delivery to finish")


def test_a_parked_run_sends_a_signed_retried_approval_required_and_a_decision_goes_on(
    llm, shared_worker, owner, allow_private, flaky_receiver
):
    make_tool_ask("moderate")
    hook = webhook_create(
        owner=owner, interface="api", url=flaky_receiver.url, events=["approval.required"]
    )
    script_a_write(llm)

    run = queue_task(owner)
    delivery = finished_delivery(hook)

    assert (delivery.event_type, delivery.status, delivery.attempts) == (
        "approval.required",
        "succeeded",
        2,
    )
    assert (delivery.last_status_code, delivery.last_error) == (204, "")
    assert len(flaky_receiver.requests) == 2
    approval = Approval.objects.get(run=run)
    for request in flaky_receiver.requests:
        headers = {k.lower(): v for k, v in request.headers.items()}
        assert headers["x-agentdesk-event"] == "approval.required"
        assert headers["x-agentdesk-delivery"] == str(delivery.pk)
        assert verify_signature(
            hook.secret,
            headers["x-agentdesk-timestamp"],
            request.body,
            headers["x-agentdesk-signature"],
        )
    data = json.loads(flaky_receiver.requests[-1].body)["data"]
    sent = data["approval"]
    assert (sent["id"], sent["run_id"], sent["tool"], sent["arguments"]) == (
        approval.pk,
        run.pk,
        "write_file",
        NOTES,
    )
    assert sent["status"] == "pending" and sent["links"]["decide"] == (
        f"/api/v1/approvals/{approval.pk}"
    )
    assert data["task"] == "Write the notes"
    assert Run.objects.get(pk=run.pk).status == "waiting_approval"

    approval_decide(approval_id=approval.pk, decision="approve", actor=owner, interface="api")
    with pytest.raises(DomainError) as late:
        approval_decide(approval_id=approval.pk, decision="deny", actor=owner, interface="web")

    assert late.value.code == "CONFLICT"
    run = wait_for_run(run.pk, 20)
    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert ToolCall.objects.get(run=run).status == "succeeded"
    notes = settings.WORKSPACE_ROOT / f"run-{run.pk}" / NOTES["path"]
    assert notes.read_text() == NOTES["content"]
    decisions = AuditEvent.objects.filter(run_id=run.pk, action="approval.decide")
    assert [(d.interface, d.actor_label, d.details["decision"]) for d in decisions] == [
        ("api", "owner", "approve")
    ]
    assert AuditEvent.objects.filter(run_id=run.pk, action="tool.call").count() == 1
    # Only the event the webhook asked for: no run.finished delivery.
    assert WebhookDelivery.objects.filter(webhook=hook).count() == 1


def test_another_users_webhook_hears_nothing_of_the_approval(
    llm, shared_worker, owner, outsider, allow_private, flaky_receiver
):
    make_tool_ask("moderate")
    theirs = webhook_create(
        owner=outsider, interface="api", url=flaky_receiver.url, events=["approval.required"]
    )
    script_a_write(llm)

    run = queue_task(owner)
    wait_for(
        lambda: Run.objects.get(pk=run.pk).status == "waiting_approval",
        15,
        message="the run to park",
    )

    assert not WebhookDelivery.objects.filter(webhook=theirs).exists()
    assert flaky_receiver.requests == []
