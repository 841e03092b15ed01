"""Outgoing webhooks: each user registers URLs that receive signed JSON for chosen events.

A delivery is a WebhookDelivery row written in the transaction of the change it announces and
queued on commit (`webhooks_notify`); the Celery task `deliver_webhook` calls
`webhook_deliver`, which POSTs it once per call and says whether to retry. Delivery is at least
once: a worker dying between the POST and recording its answer sends it again, so receivers
deduplicate by the `X-AgentDesk-Delivery` id.

Every request carries
- `X-AgentDesk-Event`: the event type (`run.finished`, `approval.required`),
- `X-AgentDesk-Delivery`: the delivery id, the same on every retry,
- `X-AgentDesk-Timestamp`: Unix seconds when this attempt was signed,
- `X-AgentDesk-Signature`: `sha256=` + hex HMAC-SHA256, keyed with the webhook's secret, of
  `"<timestamp>.<raw body>"` (see `verify_signature`).
"""

import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import Any

import httpx
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import transaction
from django.utils import timezone

from agents_app.core import dispatch, netguard
from agents_app.core.audit import WEBHOOK_CREATE, WEBHOOK_DELETE, audit_record
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.prepared import Prepared
from agents_app.models import DeliveryStatus, Webhook, WebhookDelivery, WebhookEvent

RUN_FINISHED = WebhookEvent.RUN_FINISHED
APPROVAL_REQUIRED = WebhookEvent.APPROVAL_REQUIRED

SIGNATURE_PREFIX = "sha256="
SIGNATURE_MAX_AGE_SECONDS = 300
ERROR_MAX_CHARS = 1000


class WebhookRefused(Exception):
    """The target may not be contacted (a private address while those are not allowed)."""


@dataclass(frozen=True)
class DeliveryOutcome:
    """What one call of `webhook_deliver` did; `retry` asks to be called again in `retry_in` s."""

    state: str  # succeeded | retry | failed | skipped
    retry_in: float = 0.0


# --- signing ---------------------------------------------------------------------------------


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The X-AgentDesk-Signature value for `body` sent at `timestamp`."""
    message = timestamp.encode() + b"." + body
    return SIGNATURE_PREFIX + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def verify_signature(
    secret: str,
    timestamp: str,
    body: bytes,
    header: str,
    *,
    max_age_seconds: float | None = SIGNATURE_MAX_AGE_SECONDS,
) -> bool:
    """For receivers: True when `header` (X-AgentDesk-Signature) signs the raw request `body`
    sent at `timestamp` (X-AgentDesk-Timestamp) with `secret`, and the timestamp is at most
    `max_age_seconds` old (None: any age), which keeps a captured request from being replayed
    later. Uses only the standard library, so it can be copied into any Python receiver."""
    if max_age_seconds is not None:
        try:
            age = time.time() - int(timestamp)
        except ValueError:
            return False
        if abs(age) > max_age_seconds:
            return False
    return hmac.compare_digest(sign(secret, timestamp, body), header)


# --- targets ---------------------------------------------------------------------------------


def public_addresses(url: httpx.URL) -> list[netguard.IPAddress]:
    """Every address `url`'s host resolves to; WebhookRefused unless all are public."""
    try:
        return netguard.public_addresses(url)
    except netguard.UnresolvableHost as exc:
        raise WebhookRefused(str(exc)) from None
    except netguard.PrivateAddress as exc:
        raise WebhookRefused(
            f"Host '{url.host}' resolves to a private, loopback, link-local or reserved address "
            f"({exc}); webhooks may only target public addresses"
        ) from None


def webhook_url_check(url: str) -> str:
    """The URL if a webhook may use it, else DomainError VALIDATION_ERROR: http or https only,
    and a public host unless WEBHOOK_ALLOW_PRIVATE."""
    try:
        URLValidator(schemes=["http", "https"])(url)
    except ValidationError:
        raise DomainError(
            ErrorCode.VALIDATION_ERROR, "The URL must be an http or https URL", {"field": "url"}
        ) from None
    if not settings.WEBHOOK_ALLOW_PRIVATE:
        try:
            public_addresses(httpx.URL(url))
        except WebhookRefused as exc:
            raise DomainError(ErrorCode.VALIDATION_ERROR, str(exc), {"field": "url"}) from None
    return url


def webhook_events_check(events: Any) -> list[str]:
    """The event types without duplicates, else DomainError VALIDATION_ERROR."""
    if not isinstance(events, list) or not events:
        raise DomainError(
            ErrorCode.VALIDATION_ERROR, "events must be a non-empty list", {"field": "events"}
        )
    unknown = [e for e in events if e not in WebhookEvent.values]
    if unknown:
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            f"Unknown event types: {', '.join(map(str, unknown))}",
            {"field": "events", "unknown": unknown, "allowed": list(WebhookEvent.values)},
        )
    return list(dict.fromkeys(events))


# --- registering -----------------------------------------------------------------------------


@transaction.atomic
def webhook_create(*, owner: Any, interface: str, url: str, events: list[str]) -> Webhook:
    """Register a webhook of `owner` with a new random secret and return it (the secret is
    in `webhook.secret`). Raises DomainError VALIDATION_ERROR for a bad URL or event type."""
    webhook = Webhook.objects.create(
        owner=owner, url=webhook_url_check(url), events=webhook_events_check(events)
    )
    audit_record(
        action=WEBHOOK_CREATE,
        interface=interface,
        actor=owner,
        target=webhook.url,
        details={"webhook_id": webhook.pk, "events": webhook.events},
    )
    return webhook


@transaction.atomic
def webhook_delete(*, webhook: Webhook, actor: Any, interface: str) -> None:
    """Delete the webhook and its delivery log; a delivery in flight finds it gone."""
    audit_record(
        action=WEBHOOK_DELETE,
        interface=interface,
        actor=actor,
        target=webhook.url,
        details={"webhook_id": webhook.pk, "events": webhook.events},
    )
    webhook.delete()


# --- notifying -------------------------------------------------------------------------------


# Read at the end of every run: compiled once (core.prepared).
_ACTIVE = Prepared(
    lambda owner_id: Webhook.objects.filter(owner_id=owner_id, active=True), samples=(-1,)
)


def webhooks_notify(*, user_id: int, event_type: str, payload: dict[str, Any]) -> list[int]:
    """Write one pending WebhookDelivery per active webhook of the user that wants
    `event_type`, in the caller's transaction, and queue each for delivery once it commits.
    Returns the delivery ids (empty when no webhook wants the event). `payload` must be plain
    JSON. Callers: `execution.finish` (`run.finished`) and, once approvals exist, the request
    for an approval (`approval.required`), with this same call."""
    webhooks = [w for w in _ACTIVE.rows(user_id) if w.wants(event_type)]
    if not webhooks:
        return []
    deliveries = WebhookDelivery.objects.bulk_create(
        WebhookDelivery(webhook=w, event_type=event_type, payload=payload) for w in webhooks
    )
    ids = [d.pk for d in deliveries]
    transaction.on_commit(partial(_enqueue, ids))
    return ids


def _enqueue(delivery_ids: list[int]) -> None:
    for delivery_id in delivery_ids:
        dispatch.send(dispatch.TaskName.DELIVER_WEBHOOK, delivery_id)


@transaction.atomic
def webhook_deliveries_retry(*, delivery_ids: list[int]) -> int:
    """Put failed deliveries back to pending for one more attempt now; returns how many."""
    ids = list(
        WebhookDelivery.objects.filter(
            pk__in=delivery_ids, status=DeliveryStatus.FAILED
        ).values_list("pk", flat=True)
    )
    WebhookDelivery.objects.filter(pk__in=ids, status=DeliveryStatus.FAILED).update(
        status=DeliveryStatus.PENDING, next_attempt_at=timezone.now()
    )
    transaction.on_commit(partial(_enqueue, ids))
    return len(ids)


# --- delivering ------------------------------------------------------------------------------


def retry_delay(attempt: int) -> float:
    """Seconds to wait after failed attempt number `attempt` (1-based): doubling each time."""
    return settings.WEBHOOK_RETRY_BASE_DELAY * 2 ** (attempt - 1)


def request_body(delivery: WebhookDelivery) -> bytes:
    envelope = {
        "id": delivery.pk,
        "event": delivery.event_type,
        "created_at": delivery.created_at.isoformat(),
        "data": delivery.payload,
    }
    return json.dumps(envelope, separators=(",", ":"), ensure_ascii=False).encode()


def _post(delivery: WebhookDelivery) -> int:
    """POST the delivery once and return the status code. Raises WebhookRefused for a
    private target, httpx.HTTPError when the target cannot be reached in time."""
    url = httpx.URL(delivery.webhook.url)
    body = request_body(delivery)
    timestamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "AgentDesk-Webhooks/1",
        "X-AgentDesk-Event": delivery.event_type,
        "X-AgentDesk-Delivery": str(delivery.pk),
        "X-AgentDesk-Timestamp": timestamp,
        "X-AgentDesk-Signature": sign(delivery.webhook.secret, timestamp, body),
        "Host": url.netloc.decode("ascii"),
    }
    target, extensions = url, {}
    if not settings.WEBHOOK_ALLOW_PRIVATE:
        # Connect to the address just checked, so a DNS answer changing between the check and
        # the connection (rebinding) cannot redirect the request to an internal service.
        address = public_addresses(url)[0]
        target = url.copy_with(host=str(address))
        extensions = {"sni_hostname": url.raw_host.decode("ascii")}
    # Redirects are not followed: a 3xx counts as a failed attempt.
    with httpx.Client(timeout=settings.WEBHOOK_TIMEOUT, follow_redirects=False) as client:
        request = client.build_request(
            "POST", target, content=body, headers=headers, extensions=extensions
        )
        response = client.send(request, stream=True)
        response.close()  # the answer's body is not needed
        return response.status_code


def _record(delivery_id: int, attempt: int, **fields: Any) -> None:
    """Write the outcome of `attempt` unless another worker moved the delivery on meanwhile."""
    WebhookDelivery.objects.filter(
        pk=delivery_id, attempts=attempt, status=DeliveryStatus.PENDING
    ).update(**fields)


def webhook_deliver(delivery_id: int) -> DeliveryOutcome:
    """Make the next attempt of a pending delivery and record it. Idempotent: a delivery that
    succeeded or failed for good (or is gone) is not sent again ("skipped"). Returns `retry`
    with the backoff delay while attempts remain, else `failed`."""
    delivery = WebhookDelivery.objects.select_related("webhook").filter(pk=delivery_id).first()
    if delivery is None or delivery.status != DeliveryStatus.PENDING:
        return DeliveryOutcome("skipped")
    attempt = delivery.attempts + 1
    claimed = WebhookDelivery.objects.filter(
        pk=delivery.pk, status=DeliveryStatus.PENDING, attempts=delivery.attempts
    ).update(attempts=attempt, next_attempt_at=None)
    if claimed != 1:
        return DeliveryOutcome("skipped")  # another worker got there first
    status_code: int | None = None
    error = ""
    if not delivery.webhook.active:
        _record(delivery.pk, attempt, status=DeliveryStatus.FAILED, last_error="Webhook inactive")
        return DeliveryOutcome("failed")
    try:
        status_code = _post(delivery)
    except WebhookRefused as exc:
        _record(delivery.pk, attempt, status=DeliveryStatus.FAILED, last_error=str(exc))
        return DeliveryOutcome("failed")
    except httpx.TimeoutException:
        error = f"Timed out after {settings.WEBHOOK_TIMEOUT:g} s"
    except httpx.HTTPError as exc:
        error = f"{type(exc).__name__}: {exc}"[:ERROR_MAX_CHARS]
    if status_code is not None and 200 <= status_code < 300:
        _record(
            delivery.pk,
            attempt,
            status=DeliveryStatus.SUCCEEDED,
            last_status_code=status_code,
            last_error="",
            delivered_at=timezone.now(),
        )
        return DeliveryOutcome("succeeded")
    if status_code is not None:
        error = f"HTTP {status_code}"
    if attempt >= settings.WEBHOOK_MAX_ATTEMPTS:
        _record(
            delivery.pk,
            attempt,
            status=DeliveryStatus.FAILED,
            last_status_code=status_code,
            last_error=error,
        )
        return DeliveryOutcome("failed")
    delay = retry_delay(attempt)
    _record(
        delivery.pk,
        attempt,
        last_status_code=status_code,
        last_error=error,
        next_attempt_at=timezone.now() + timedelta(seconds=delay),
    )
    return DeliveryOutcome("retry", retry_in=delay)
