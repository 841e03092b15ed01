"""Parking a run on a person: the announcement (event, webhooks) and the expiry timer, queued
on the real broker for the moment the approval expires."""

import json
from datetime import datetime, timedelta

import pytest
import redis
from django.conf import settings
from django.utils import timezone

from agents_app.approvals.parking import park_on_plan, schedule_expiry
from agents_app.core.events import EventType
from agents_app.models import Plan, RunEvent, RunStatus, Webhook, WebhookDelivery
from agents_app.runs.writer import locked_run
from config.celery import app as celery_app
from tests.support.runs import advance, make_run


@pytest.fixture
def broker_queue():
    """The Redis list the workers read, as (client, key), emptied of earlier messages."""
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    queue = celery_app.conf.task_default_queue
    broker.delete(queue)
    yield broker, queue
    broker.delete(queue)


def park_on_a_plan(owner):
    run = advance(make_run(owner), RunStatus.PLANNING)
    plan = Plan.objects.create(run=run, version=1, raw={"steps": []})
    with locked_run(run.pk) as w:
        return park_on_plan(w, plan)


def queued_expiry(broker, queue) -> tuple[str, datetime | None]:
    """The one queued message's arguments and when it is due (None: at once)."""
    (raw,) = broker.lrange(queue, 0, -1)
    headers = json.loads(raw)["headers"]
    assert headers["task"] == "agents_app.tasks.expire_approval"
    eta = headers["eta"]
    return headers["argsrepr"], datetime.fromisoformat(eta) if eta else None


@pytest.mark.django_db
def test_parking_announces_the_approval_as_an_event_of_the_run(owner):
    approval = park_on_a_plan(owner)
    event = RunEvent.objects.get(run=approval.run, type=EventType.APPROVAL_REQUIRED)
    assert event.payload["id"] == approval.pk


@pytest.mark.django_db
def test_parking_tells_the_owners_webhooks_that_want_it(owner, teammate):
    mine = Webhook.objects.create(
        owner=owner, url="https://hooks.example.com/a", events=["approval.required"]
    )
    Webhook.objects.create(
        owner=teammate, url="https://hooks.example.com/b", events=["approval.required"]
    )
    park_on_a_plan(owner)
    (delivery,) = WebhookDelivery.objects.all()
    assert (delivery.webhook, delivery.event_type) == (mine, "approval.required")


@pytest.mark.django_db
def test_an_expiry_is_queued_for_the_moment_the_approval_expires(broker_queue):
    broker, queue = broker_queue
    expires_at = timezone.now() + timedelta(seconds=30)
    schedule_expiry(41, expires_at)
    args, eta = queued_expiry(broker, queue)
    assert args == "(41,)"
    assert abs(eta - expires_at) < timedelta(seconds=2)


@pytest.mark.django_db
def test_an_expiry_already_past_is_queued_for_now(broker_queue):
    broker, queue = broker_queue
    before = timezone.now()
    schedule_expiry(42, before - timedelta(minutes=5))
    after = timezone.now()
    _, eta = queued_expiry(broker, queue)
    assert eta is None or before - timedelta(milliseconds=100) <= eta <= after
