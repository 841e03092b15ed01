"""REST endpoints for a user's outgoing webhooks: Schema in, service or selector, Schema out."""

from datetime import datetime
from typing import Any

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema, Status

from agents_app.api.schemas import NonBlankText, Page, PageSize
from agents_app.models import AuditInterface, WebhookEvent
from agents_app.webhooks import selectors, services

router = Router(tags=["webhooks"])


class WebhookIn(Schema):
    url: NonBlankText = Field(
        max_length=2000,
        json_schema_extra={"format": "uri"},
        description="http or https URL that receives the POSTs.",
    )
    events: list[WebhookEvent] = Field(
        default_factory=lambda: list(WebhookEvent.values),
        min_length=1,
        description='Event types to send; all ("run.finished", "approval.required") if omitted.',
    )


class WebhookOut(Schema):
    id: int
    url: str
    events: list[str]
    active: bool
    created_at: datetime


class WebhookCreated(WebhookOut):
    secret: str = Field(description="Signs every delivery. Shown only in this answer.")


class WebhookList(Schema):
    results: list[WebhookOut]


class DeliveryOut(Schema):
    id: int
    event_type: str
    payload: dict[str, Any]
    status: str
    attempts: int
    last_status_code: int | None
    last_error: str
    next_attempt_at: datetime | None
    created_at: datetime
    delivered_at: datetime | None


class DeliveryPage(Schema):
    webhook_id: int
    count: int
    page: int
    page_size: int
    results: list[DeliveryOut]


class DeliveryQuery(Schema):
    page: Page = 1
    page_size: PageSize = 20


@router.get("/webhooks", response=WebhookList, summary="List your webhooks")
def list_webhooks(request: HttpRequest):
    return {"results": list(selectors.webhooks_for(request.user))}


@router.post("/webhooks", response={201: WebhookCreated}, summary="Register a webhook")
def create_webhook(request: HttpRequest, payload: WebhookIn):
    """201 with the webhook and its secret, which is not shown again: keep it to verify the
    X-AgentDesk-Signature of each delivery."""
    webhook = services.webhook_create(
        owner=request.user, interface=AuditInterface.API, url=payload.url, events=payload.events
    )
    return Status(201, webhook)


@router.delete("/webhooks/{int:webhook_id}", response={204: None}, summary="Delete a webhook")
def delete_webhook(request: HttpRequest, webhook_id: int):
    webhook = selectors.webhook_get(user=request.user, webhook_id=webhook_id)
    services.webhook_delete(webhook=webhook, actor=request.user, interface=AuditInterface.API)
    return Status(204, None)


@router.get(
    "/webhooks/{int:webhook_id}/deliveries",
    response=DeliveryPage,
    summary="The webhook's delivery log, newest first",
)
def list_deliveries(request: HttpRequest, webhook_id: int, query: Query[DeliveryQuery]):
    webhook = selectors.webhook_get(user=request.user, webhook_id=webhook_id)
    deliveries = selectors.webhook_deliveries(webhook=webhook)
    start = (query.page - 1) * query.page_size
    return {
        "webhook_id": webhook.pk,
        "count": deliveries.count(),
        "page": query.page,
        "page_size": query.page_size,
        "results": list(deliveries[start : start + query.page_size]),
    }
