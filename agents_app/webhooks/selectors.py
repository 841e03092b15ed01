"""Reads of webhooks and their deliveries, scoped to the owner."""

from typing import Any

from django.db.models import QuerySet

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.models import (
    Webhook,
    WebhookDelivery,
)


def webhooks_for(user: Any) -> QuerySet[Webhook]:
    return Webhook.objects.filter(owner=user)


def webhook_get(*, user: Any, webhook_id: int) -> Webhook:
    """The user's webhook, or DomainError NOT_FOUND (also for another user's webhook)."""
    webhook = webhooks_for(user).filter(pk=webhook_id).first()
    if webhook is None:
        raise DomainError(
            ErrorCode.NOT_FOUND, f"Webhook {webhook_id} not found", {"webhook_id": webhook_id}
        )
    return webhook


def webhook_deliveries(*, webhook: Webhook) -> QuerySet[WebhookDelivery]:
    return WebhookDelivery.objects.filter(webhook=webhook).order_by("-created_at", "-id")
