"""Runs finished by a real Celery worker deliver their `run.finished` webhook."""

import json

import pytest

from agents_app.models import WebhookDelivery
from agents_app.tasks import execute_run
from agents_app.webhooks.services import verify_signature
from tests.support.runs import make_run
from tests.support.script import plan_reply, step, verdict
from tests.support.waiting import wait_for, wait_for_run

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def module_worker_env():
    """The shared worker may reach the receivers on 127.0.0.1, and retries quickly."""
    return {"WEBHOOK_ALLOW_PRIVATE": "true", "WEBHOOK_RETRY_BASE_DELAY": "0.2"}


def script_a_run(llm):
    llm.script(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("say hi"))]},
            {"match": "AGENTDESK:STEP 0", "replies": [{"content": "hi"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "said hi")]},
        ]
    )


def finished_delivery(hook):
    def check():
        delivery = WebhookDelivery.objects.filter(webhook=hook).first()
        return delivery if delivery and delivery.status != "pending" else None

    return wait_for(check, timeout=30, message="the delivery to finish")


def test_a_run_finished_on_a_worker_delivers_one_signed_event(
    llm, shared_worker, owner, hook_for, receiver
):
    script_a_run(llm)
    hook = hook_for(owner, receiver.url)
    run = make_run(owner, "Say hi")
    execute_run.delay(run.pk)
    run = wait_for_run(run.pk)
    delivery = finished_delivery(hook)

    assert (delivery.status, delivery.attempts) == ("succeeded", 1)
    [request] = receiver.requests
    headers = {k.lower(): v for k, v in request.headers.items()}
    assert headers["x-agentdesk-event"] == "run.finished"
    assert headers["x-agentdesk-delivery"] == str(delivery.pk)
    assert verify_signature(
        hook.secret,
        headers["x-agentdesk-timestamp"],
        request.body,
        headers["x-agentdesk-signature"],
    )
    data = json.loads(request.body)["data"]
    assert (data["run_id"], data["status"], data["final_response"]) == (
        run.pk,
        "succeeded",
        "said hi",
    )


def test_a_receiver_failing_twice_gets_the_delivery_on_the_third_attempt(
    llm, shared_worker, owner, hook_for, receiver_factory
):
    script_a_run(llm)
    receiver = receiver_factory(fail_first=2)
    hook = hook_for(owner, receiver.url)
    run = make_run(owner, "Say hi")
    execute_run.delay(run.pk)
    wait_for_run(run.pk)
    delivery = finished_delivery(hook)

    assert (delivery.status, delivery.attempts, delivery.last_status_code) == (
        "succeeded",
        3,
        204,
    )
    assert len(receiver.requests) == 3
    ids = {r.headers["X-AgentDesk-Delivery"] for r in receiver.requests}
    assert ids == {str(delivery.pk)}
