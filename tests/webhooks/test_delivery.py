"""Delivering in this process, to a real local receiver: the service the Celery task calls."""

import json
import threading
from datetime import timedelta

import pytest
import redis
from django.conf import settings as django_settings
from django.db import connection
from django.utils import timezone

from agents_app.models import RunStatus, Webhook, WebhookDelivery
from agents_app.runs.lifecycle import finish
from agents_app.runs.writer import locked_run
from agents_app.webhooks.services import (
    verify_signature,
    webhook_deliver,
    webhook_deliveries_retry,
    webhooks_notify,
)
from config.celery import app as celery_app
from tests.support.processes import free_port
from tests.support.runs import make_run


@pytest.fixture
def delivery_to(hook_for, owner, allow_private):
    def make(url: str, payload=None) -> WebhookDelivery:
        hook = hook_for(owner, url)
        return WebhookDelivery.objects.create(
            webhook=hook, event_type="run.finished", payload=payload or {"run_id": 7}
        )

    return make


def test_a_delivery_posts_signed_json_with_its_headers(delivery_to, receiver):
    delivery = delivery_to(receiver.url)
    assert webhook_deliver(delivery.pk).state == "succeeded"

    [request] = receiver.requests
    headers = {k.lower(): v for k, v in request.headers.items()}
    assert headers["x-agentdesk-event"] == "run.finished"
    assert headers["x-agentdesk-delivery"] == str(delivery.pk)
    assert verify_signature(
        delivery.webhook.secret,
        headers["x-agentdesk-timestamp"],
        request.body,
        headers["x-agentdesk-signature"],
    )
    body = json.loads(request.body)
    assert body["id"] == delivery.pk and body["event"] == "run.finished"
    assert body["data"] == {"run_id": 7}
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("succeeded", 1, 204)
    assert delivery.delivered_at is not None


@pytest.mark.dialect
def test_a_succeeded_delivery_is_not_sent_again(delivery_to, receiver):
    delivery = delivery_to(receiver.url)
    webhook_deliver(delivery.pk)
    assert webhook_deliver(delivery.pk).state == "skipped"
    assert len(receiver.requests) == 1


def test_a_failing_receiver_is_retried_with_exponential_backoff(
    delivery_to, receiver_factory, settings
):
    settings.WEBHOOK_RETRY_BASE_DELAY = 5
    receiver = receiver_factory(fail_first=2)
    delivery = delivery_to(receiver.url)
    outcomes = [webhook_deliver(delivery.pk) for _ in range(3)]
    assert [(o.state, o.retry_in) for o in outcomes] == [
        ("retry", 5),
        ("retry", 10),
        ("succeeded", 0),
    ]
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("succeeded", 3)


def test_a_delivery_that_keeps_failing_ends_failed_after_max_attempts(
    delivery_to, receiver_factory, settings
):
    settings.WEBHOOK_MAX_ATTEMPTS = 3
    receiver = receiver_factory(fail_first=100)
    delivery = delivery_to(receiver.url)
    states = [webhook_deliver(delivery.pk).state for _ in range(4)]
    assert states == ["retry", "retry", "failed", "skipped"]
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("failed", 3)
    assert (delivery.last_status_code, delivery.last_error) == (500, "HTTP 500")
    assert len(receiver.requests) == 3


def test_an_unreachable_receiver_counts_as_a_failed_attempt(delivery_to):
    delivery = delivery_to(f"http://127.0.0.1:{free_port()}/hook")
    assert webhook_deliver(delivery.pk).state == "retry"
    delivery.refresh_from_db()
    assert delivery.last_status_code is None and "ConnectError" in delivery.last_error
    assert delivery.next_attempt_at is not None


def test_a_private_target_is_refused_at_delivery_unless_allowed(delivery_to, receiver, settings):
    delivery = delivery_to(receiver.url)
    settings.WEBHOOK_ALLOW_PRIVATE = False
    assert webhook_deliver(delivery.pk).state == "failed"
    delivery.refresh_from_db()
    assert "private, loopback" in delivery.last_error
    assert receiver.requests == []


def test_retry_now_gives_a_failed_delivery_one_more_attempt(
    delivery_to, receiver_factory, settings, django_capture_on_commit_callbacks
):
    settings.WEBHOOK_MAX_ATTEMPTS = 1
    receiver = receiver_factory(fail_first=1)
    delivery = delivery_to(receiver.url)
    assert webhook_deliver(delivery.pk).state == "failed"
    with django_capture_on_commit_callbacks() as callbacks:
        assert webhook_deliveries_retry(delivery_ids=[delivery.pk]) == 1
    assert len(callbacks) == 1
    assert webhook_deliver(delivery.pk).state == "succeeded"
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("succeeded", 2)


def test_notify_writes_one_delivery_per_active_webhook_that_wants_the_event(
    owner, outsider, hook_for, django_capture_on_commit_callbacks
):
    wanted = hook_for(owner, "https://93.184.215.14/a")
    hook_for(owner, "https://93.184.215.14/b", events=["approval.required"])
    hook_for(owner, "https://93.184.215.14/c", active=False)
    hook_for(outsider, "https://93.184.215.14/d")
    with django_capture_on_commit_callbacks() as callbacks:
        ids = webhooks_notify(user_id=owner.pk, event_type="run.finished", payload={"x": 1})
    assert [d.webhook_id for d in WebhookDelivery.objects.filter(pk__in=ids)] == [wanted.pk]
    assert len(callbacks) == 1


def test_a_finished_run_writes_a_run_finished_delivery(owner, hook_for):
    hook = hook_for(owner, "https://93.184.215.14/hook")
    run = make_run(owner, "Say hi")
    with locked_run(run.pk) as w:
        finish(w, RunStatus.CANCELLED, "CANCELLED", "Cancelled by request")
    delivery = WebhookDelivery.objects.get(webhook=hook)
    run.refresh_from_db()
    assert delivery.event_type == "run.finished"
    assert delivery.payload == {
        "run_id": run.pk,
        "task": "Say hi",
        "status": "cancelled",
        "error_code": "CANCELLED",
        "cause": "Cancelled by request",
        "final_response": "",
        "finished_at": run.finished_at.isoformat(),
        "origin": None,
        "links": {
            "self": f"/api/v1/runs/{run.pk}",
            "events": f"/api/v1/runs/{run.pk}/events",
            "cancel": f"/api/v1/runs/{run.pk}/cancel",
            "restart": f"/api/v1/runs/{run.pk}/restart",
            "websocket": f"/ws/api/runs/{run.pk}/",
        },
    }


@pytest.fixture
def broker_queue():
    """The Redis list the workers read, as (client, key), emptied before and after the test."""
    broker = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
    queue = celery_app.conf.task_default_queue
    broker.delete(queue)
    yield broker, queue
    broker.delete(queue)


@pytest.mark.dialect
def test_a_failed_attempt_is_tried_again_once_its_backoff_has_passed(
    delivery_to, receiver_factory, settings
):
    settings.WEBHOOK_RETRY_BASE_DELAY = 60
    delivery = delivery_to(receiver_factory(fail_first=1).url)
    before = timezone.now()

    assert webhook_deliver(delivery.pk).state == "retry"

    delivery.refresh_from_db()
    backoff = timedelta(seconds=60)
    assert before + backoff <= delivery.next_attempt_at <= timezone.now() + backoff


@pytest.mark.parametrize("status", [200, 299])
def test_every_2xx_answer_counts_as_delivered(delivery_to, receiver_factory, status):
    delivery = delivery_to(receiver_factory(status=status).url)

    assert webhook_deliver(delivery.pk).state == "succeeded"

    delivery.refresh_from_db()
    assert (delivery.status, delivery.last_status_code) == ("succeeded", status)


@pytest.mark.dialect
def test_notify_queues_each_delivery_for_a_worker_once_committed(
    owner, hook_for, broker_queue, django_capture_on_commit_callbacks
):
    hook_for(owner, "https://93.184.215.14/a")
    hook_for(owner, "https://93.184.215.14/b")
    broker, queue = broker_queue

    with django_capture_on_commit_callbacks(execute=True):
        ids = webhooks_notify(user_id=owner.pk, event_type="run.finished", payload={"x": 1})

    queued = [json.loads(raw)["headers"] for raw in broker.lrange(queue, 0, -1)]
    assert len(ids) == 2
    assert sorted((h["task"], h["argsrepr"]) for h in queued) == sorted(
        ("agents_app.tasks.deliver_webhook", f"({delivery_id},)") for delivery_id in ids
    )


@pytest.mark.dialect
@pytest.mark.django_db(transaction=True)
def test_a_delivery_another_worker_sends_meanwhile_is_not_sent_again(delivery_to, receiver):
    delivery = delivery_to(receiver.url)
    other = []

    def other_worker_delivers():
        try:
            other.append(webhook_deliver(delivery.pk))
        finally:
            connection.close()  # this thread's own connection (django.db.connection is per thread)

    def another_worker_delivers_once_this_one_has_read_it(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if not other and sql.lstrip().upper().startswith("SELECT") and "webhookdelivery" in sql:
            other.append("started")
            # Another worker: its own thread and database connection.
            worker = threading.Thread(target=other_worker_delivers)
            worker.start()
            worker.join()
        return result

    with connection.execute_wrapper(another_worker_delivers_once_this_one_has_read_it):
        outcome = webhook_deliver(delivery.pk)

    assert other[1].state == "succeeded"
    assert outcome.state == "skipped"
    assert len(receiver.requests) == 1


def test_a_public_target_is_reached_at_the_first_address_checked_under_its_own_name(
    delivery_to, receiver, settings, monkeypatch
):
    import ipaddress

    from agents_app.webhooks import services

    port = receiver.url.split(":")[2].split("/")[0]
    delivery = delivery_to(f"http://hooks.example.test:{port}/hook")
    settings.WEBHOOK_ALLOW_PRIVATE = False
    # As a public name resolving to two addresses would: the first is where the receiver is.
    checked = [ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("192.0.2.1")]
    monkeypatch.setattr(services, "public_addresses", lambda url: checked)

    assert webhook_deliver(delivery.pk).state == "succeeded"

    (received,) = receiver.requests
    assert received.headers["Host"] == f"hooks.example.test:{port}"


def test_an_attempt_s_error_is_kept_to_its_first_thousand_characters(delivery_to, monkeypatch):
    import httpx

    from agents_app.webhooks import services

    def post(delivery):
        raise httpx.ConnectError("x" * 5000)

    monkeypatch.setattr(services, "_post", post)
    delivery = delivery_to("http://127.0.0.1:9/hook")

    assert webhook_deliver(delivery.pk).state == "retry"

    delivery.refresh_from_db()
    assert delivery.last_error == ("ConnectError: " + "x" * 5000)[:1000]


def test_a_delivery_that_is_gone_is_skipped(db):
    assert webhook_deliver(10**9).state == "skipped"


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ([], "events must be a non-empty list"),
        ("run.finished", "events must be a non-empty list"),
        (["run.finished", "run.started"], "Unknown event types: run.started"),
    ],
)
def test_the_events_a_webhook_wants_are_a_list_of_known_types(events, message):
    from agents_app.core.errors import DomainError
    from agents_app.webhooks.services import webhook_events_check

    with pytest.raises(DomainError) as refused:
        webhook_events_check(events)

    assert (refused.value.code, refused.value.message) == ("VALIDATION_ERROR", message)


def test_a_webhook_s_host_that_does_not_resolve_is_refused(settings):
    from agents_app.core.errors import DomainError
    from agents_app.webhooks.services import webhook_url_check

    settings.WEBHOOK_ALLOW_PRIVATE = False

    with pytest.raises(DomainError) as refused:
        webhook_url_check("http://nowhere.invalid/hook")  # .invalid never resolves (RFC 2606)

    assert refused.value.code == "VALIDATION_ERROR" and refused.value.details == {"field": "url"}


@pytest.mark.parametrize(("age", "fresh"), [(300, True), (301, False)])
def test_a_signature_is_fresh_for_five_minutes_to_the_second(monkeypatch, age, fresh):
    from types import SimpleNamespace

    from agents_app.webhooks import services

    monkeypatch.setattr(services, "time", SimpleNamespace(time=lambda: 1_000_000.0))
    timestamp = str(1_000_000 - age)
    body = b'{"id":1}'

    assert (
        verify_signature("s3cret", timestamp, body, services.sign("s3cret", timestamp, body))
        is fresh
    )


def test_a_redirect_counts_as_a_failed_attempt_and_is_not_followed(delivery_to, receiver_factory):
    receiver = receiver_factory(status=307)
    delivery = delivery_to(receiver.url)

    assert webhook_deliver(delivery.pk).state == "retry"

    delivery.refresh_from_db()
    assert (delivery.last_status_code, delivery.last_error) == (307, "HTTP 307")
    assert len(receiver.requests) == 1


def test_an_answer_of_300_is_not_delivered(delivery_to, receiver_factory):
    delivery = delivery_to(receiver_factory(status=300).url)

    assert webhook_deliver(delivery.pk).state == "retry"


def test_a_delivery_s_body_keeps_its_text_as_written(delivery_to, receiver):
    delivery = delivery_to(receiver.url, payload={"text": "café ☕"})

    webhook_deliver(delivery.pk)

    (received,) = receiver.requests
    assert "café ☕".encode() in received.body


def test_a_delivery_to_a_webhook_switched_off_fails_without_a_request(delivery_to, receiver):
    delivery = delivery_to(receiver.url)
    Webhook.objects.filter(pk=delivery.webhook_id).update(active=False)

    assert webhook_deliver(delivery.pk).state == "failed"

    delivery.refresh_from_db()
    assert (delivery.status, delivery.last_error) == ("failed", "Webhook inactive")
    assert receiver.requests == []


def test_a_receiver_that_does_not_answer_in_time_is_a_failed_attempt_saying_so(
    delivery_to, monkeypatch, settings
):
    import httpx

    from agents_app.webhooks import services

    def post(delivery):
        raise httpx.ReadTimeout("timed out")

    monkeypatch.setattr(services, "_post", post)
    settings.WEBHOOK_TIMEOUT = 2.5
    delivery = delivery_to("http://127.0.0.1:9/hook")

    assert webhook_deliver(delivery.pk).state == "retry"

    delivery.refresh_from_db()
    assert delivery.last_error == "Timed out after 2.5 s"
