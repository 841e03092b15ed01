"""The app's rows, one module per idea; everything is importable from `agents_app.models`."""

from agents_app.models.audit import (
    AuditEvent,
    AuditEventQuerySet,
    AuditInterface,
    AuditLogIsAppendOnly,
)
from agents_app.models.control import KillSwitch
from agents_app.models.keys import API_KEY_PREFIX, ApiKey
from agents_app.models.runs import (
    ACTIVE_STATUSES,
    RUN_TRANSITIONS,
    STEP_DONE_STATUSES,
    TERMINAL_STATUSES,
    Plan,
    Run,
    RunEvent,
    RunStatus,
    Step,
    StepStatus,
    Task,
    ToolCall,
    ToolCallStatus,
)
from agents_app.models.webhooks import (
    WEBHOOK_SECRET_PREFIX,
    DeliveryStatus,
    Webhook,
    WebhookDelivery,
    WebhookEvent,
    webhook_secret,
)

__all__ = [
    "ACTIVE_STATUSES",
    "API_KEY_PREFIX",
    "RUN_TRANSITIONS",
    "STEP_DONE_STATUSES",
    "TERMINAL_STATUSES",
    "WEBHOOK_SECRET_PREFIX",
    "ApiKey",
    "AuditEvent",
    "AuditEventQuerySet",
    "AuditInterface",
    "AuditLogIsAppendOnly",
    "DeliveryStatus",
    "KillSwitch",
    "Plan",
    "Run",
    "RunEvent",
    "RunStatus",
    "Step",
    "StepStatus",
    "Task",
    "ToolCall",
    "ToolCallStatus",
    "Webhook",
    "WebhookDelivery",
    "WebhookEvent",
    "webhook_secret",
]
