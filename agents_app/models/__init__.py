"""The app's rows, one module per idea; everything is importable from `agents_app.models`."""

from agents_app.models.approvals import (
    DECISION_STATUS,
    Approval,
    ApprovalKind,
    ApprovalRule,
    ApprovalStatus,
    Decision,
    Remember,
    TimeoutStrategy,
    UserPreferences,
)
from agents_app.models.audit import (
    AuditEvent,
    AuditEventQuerySet,
    AuditInterface,
    AuditLogIsAppendOnly,
)
from agents_app.models.connections import ConnectionStatus, LLMConnection, ModelPhase
from agents_app.models.contracts import ContractAgent
from agents_app.models.control import KillSwitch
from agents_app.models.conversations import (
    Conversation,
    ConversationEntry,
    DoubleTexting,
    EntryKind,
)
from agents_app.models.exchanges import ModelExchange
from agents_app.models.journal import ChangeKind, WorkspaceChange
from agents_app.models.keys import API_KEY_PREFIX, ApiKey
from agents_app.models.profiles import PROFILE_BUDGETS, AgentProfile, AgentRole
from agents_app.models.runs import (
    ACTIVE_STATUSES,
    PARKED_STATUSES,
    RUN_TRANSITIONS,
    STEP_DONE_STATUSES,
    TERMINAL_STATUSES,
    ClosePolicy,
    Origin,
    Plan,
    Run,
    RunEvent,
    RunKind,
    RunStatus,
    Step,
    StepStatus,
    Task,
    ToolCall,
    ToolCallStatus,
)
from agents_app.models.teams import AgentMessage, MessageType
from agents_app.models.webhooks import (
    WEBHOOK_SECRET_PREFIX,
    DeliveryStatus,
    Webhook,
    WebhookDelivery,
    WebhookEvent,
    webhook_secret,
)

__all__ = [
    "DECISION_STATUS",
    "Approval",
    "ApprovalKind",
    "ApprovalRule",
    "ApprovalStatus",
    "Decision",
    "Remember",
    "TimeoutStrategy",
    "UserPreferences",
    "ACTIVE_STATUSES",
    "AgentMessage",
    "ClosePolicy",
    "MessageType",
    "AgentProfile",
    "AgentRole",
    "PROFILE_BUDGETS",
    "API_KEY_PREFIX",
    "PARKED_STATUSES",
    "RUN_TRANSITIONS",
    "STEP_DONE_STATUSES",
    "TERMINAL_STATUSES",
    "WEBHOOK_SECRET_PREFIX",
    "ApiKey",
    "AuditEvent",
    "AuditEventQuerySet",
    "AuditInterface",
    "AuditLogIsAppendOnly",
    "ConnectionStatus",
    "ContractAgent",
    "Conversation",
    "ConversationEntry",
    "DoubleTexting",
    "EntryKind",
    "RunKind",
    "Origin",
    "LLMConnection",
    "ModelExchange",
    "WorkspaceChange",
    "ChangeKind",
    "ModelPhase",
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
