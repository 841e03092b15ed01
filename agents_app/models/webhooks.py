"""Outgoing webhooks and their delivery log."""

import secrets

from django.conf import settings
from django.core.validators import URLValidator
from django.db import models
from django.utils import timezone


class WebhookEvent(models.TextChoices):
    RUN_FINISHED = "run.finished"
    APPROVAL_REQUIRED = "approval.required"


WEBHOOK_SECRET_PREFIX = "whsec_"


def webhook_secret() -> str:
    return WEBHOOK_SECRET_PREFIX + secrets.token_urlsafe(32)


class Webhook(models.Model):
    """An outgoing webhook a user registered. The secret is stored in clear because every
    delivery is signed with it; it is shown to its owner (API: once, at creation; admin)."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhooks"
    )
    url = models.URLField(
        max_length=2000,
        validators=[URLValidator(schemes=["http", "https"])],
        help_text="http or https; private addresses are refused unless WEBHOOK_ALLOW_PRIVATE.",
    )
    secret = models.CharField(max_length=100, default=webhook_secret, editable=False)
    events = models.JSONField(
        default=list, help_text='Event types to send: "run.finished", "approval.required".'
    )
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.url} ({', '.join(self.events)})"

    def wants(self, event_type: str) -> bool:
        return self.active and event_type in self.events


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class WebhookDelivery(models.Model):
    """One event sent (or being sent) to one webhook: the delivery log."""

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event_type = models.CharField(max_length=40, choices=WebhookEvent.choices)
    payload = models.JSONField(default=dict)
    status = models.CharField(
        max_length=10, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "webhook deliveries"
        indexes = [models.Index(fields=["webhook", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.event_type} #{self.pk} → webhook {self.webhook_id} ({self.status})"
