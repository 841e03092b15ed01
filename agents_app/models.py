"""Rows of a run and the rules about one row. State changes live in services.py and execution.py."""

import hashlib
import secrets
from typing import Any, NoReturn

from django.conf import settings
from django.core.validators import URLValidator
from django.db import models
from django.utils import timezone


class Task(models.Model):
    """What a person asked for. Each execution attempt is a Run."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tasks"
    )
    text = models.TextField()
    context = models.JSONField(default=dict, blank=True)
    max_tokens = models.PositiveIntegerField(
        null=True, blank=True, help_text="Overrides RUN_MAX_TOKENS."
    )
    max_tool_calls = models.PositiveIntegerField(
        null=True, blank=True, help_text="Overrides RUN_MAX_TOOL_CALLS."
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.text[:60]


class RunStatus(models.TextChoices):
    QUEUED = "queued"
    PLANNING = "planning"
    RUNNING = "running"
    VERIFYING = "verifying"
    # Parked by the kill switch at a step boundary; its release resumes it where it was.
    PAUSED = "paused"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


TERMINAL_STATUSES = frozenset({RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED})

# The one table of allowed status changes; nothing else decides what may follow what.
ACTIVE_STATUSES = frozenset(
    {RunStatus.QUEUED, RunStatus.PLANNING, RunStatus.RUNNING, RunStatus.VERIFYING}
)
_ENDS = frozenset({RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.PAUSED})
RUN_TRANSITIONS: dict[str, frozenset[str]] = {
    RunStatus.QUEUED: frozenset({RunStatus.PLANNING}) | _ENDS,
    RunStatus.PLANNING: frozenset({RunStatus.RUNNING}) | _ENDS,
    RunStatus.RUNNING: frozenset({RunStatus.VERIFYING}) | _ENDS,
    RunStatus.VERIFYING: frozenset({RunStatus.SUCCEEDED, RunStatus.PLANNING}) | _ENDS,
    RunStatus.PAUSED: ACTIVE_STATUSES | {RunStatus.FAILED, RunStatus.CANCELLED},
    RunStatus.SUCCEEDED: frozenset(),
    RunStatus.FAILED: frozenset(),
    RunStatus.CANCELLED: frozenset(),
}


class Run(models.Model):
    """One execution attempt of a Task. Its rows are the run's whole state: no worker keeps any."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="runs")
    # Denormalised from task.owner so every scoped read is one indexed filter.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="runs"
    )
    attempt = models.PositiveIntegerField(default=1)
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.QUEUED)
    replans = models.PositiveIntegerField(default=0)
    replan_reason = models.TextField(blank=True)
    final_response = models.TextField(blank=True)
    error_code = models.CharField(max_length=40, blank=True)
    error_message = models.TextField(blank=True)

    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    tool_calls_made = models.PositiveIntegerField(default=0)
    max_tokens = models.PositiveIntegerField()
    max_tool_calls = models.PositiveIntegerField()

    cancel_requested = models.BooleanField(default=False)
    # While paused: the status to go back to when the kill switch is released.
    resume_status = models.CharField(max_length=20, choices=RunStatus.choices, blank=True)
    # Lease: the worker holding it may execute the run; an expired lease may be taken over.
    lease_owner = models.CharField(max_length=64, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # Last RunEvent.seq; advanced under the run's row lock so seqs are gapless per run.
    event_seq = models.PositiveIntegerField(default=0)

    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["owner", "status", "-created_at"])]

    def __str__(self) -> str:
        return f"Run {self.pk} ({self.status})"

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def can_transition_to(self, status: str) -> bool:
        return status in RUN_TRANSITIONS[self.status]

    def duration_seconds(self) -> float | None:
        if not self.started_at:
            return None
        end = self.finished_at or timezone.now()
        return (end - self.started_at).total_seconds()


class Plan(models.Model):
    """A version of the run's plan. A replan adds a version; older versions stay as history."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="plans")
    version = models.PositiveIntegerField()
    reason = models.TextField(
        blank=True, help_text="Why this version was made (empty for the first)."
    )
    raw = models.JSONField(default=dict, help_text="The validated plan as the model returned it.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "version"]
        constraints = [
            models.UniqueConstraint(fields=["run", "version"], name="plan_version_unique")
        ]

    def __str__(self) -> str:
        return f"Plan v{self.version} of run {self.run_id}"


class StepStatus(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    SKIPPED = "skipped"
    TIMEOUT = "timeout"


STEP_DONE_STATUSES = frozenset(
    {StepStatus.COMPLETED, StepStatus.FAILED, StepStatus.SKIPPED, StepStatus.TIMEOUT}
)


class Step(models.Model):
    plan = models.ForeignKey(Plan, on_delete=models.CASCADE, related_name="steps")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="steps")
    index = models.PositiveIntegerField()
    objective = models.TextField()
    tool_names = models.JSONField(default=list)
    reasoning = models.TextField(blank=True)
    depends_on = models.JSONField(default=list)
    status = models.CharField(max_length=10, choices=StepStatus.choices, default=StepStatus.PENDING)
    output = models.TextField(blank=True)
    error = models.TextField(blank=True)
    thinking = models.TextField(blank=True, help_text="The model's reasoning while executing it.")
    # Attempts after the first: a step interrupted by a crash runs again and counts it here.
    retry_count = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["plan", "index"]
        constraints = [models.UniqueConstraint(fields=["plan", "index"], name="step_index_unique")]

    def __str__(self) -> str:
        return f"Step {self.index} of plan {self.plan_id}"

    @property
    def is_done(self) -> bool:
        return self.status in STEP_DONE_STATUSES


class ToolCallStatus(models.TextChoices):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class ToolCall(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="tool_calls")
    step = models.ForeignKey(Step, on_delete=models.CASCADE, related_name="tool_calls")
    attempt = models.PositiveIntegerField(
        default=0, help_text="The step's retry_count at the call."
    )
    tool = models.CharField(max_length=200)
    arguments = models.JSONField(default=dict)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    status = models.CharField(
        max_length=10, choices=ToolCallStatus.choices, default=ToolCallStatus.RUNNING
    )
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.tool} ({self.status})"


class RunEvent(models.Model):
    """Append-only log of a run; (run, seq) is gapless and ordered, so clients resume by seq."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=40)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="run_event_seq_unique")]

    def __str__(self) -> str:
        return f"{self.run_id}#{self.seq} {self.type}"


API_KEY_PREFIX = "adk_"


class ApiKey(models.Model):
    """A bearer key for mobile and script clients. Only its SHA-256 is stored."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, editable=False, help_text="Shown to tell keys apart.")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked = models.BooleanField(default=False)

    class Meta:
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @staticmethod
    def hash(raw_key: str) -> str:
        # Keys are 256 random bits, so a plain digest is enough: no dictionary to defend against.
        return hashlib.sha256(raw_key.encode()).hexdigest()

    @classmethod
    def generate(cls) -> str:
        return API_KEY_PREFIX + secrets.token_urlsafe(32)

    def set_key(self, raw_key: str) -> None:
        self.prefix = raw_key[: len(API_KEY_PREFIX) + 6]
        self.key_hash = self.hash(raw_key)


class AuditLogIsAppendOnly(Exception):
    """Raised by every attempt to change or delete an AuditEvent."""


def _refuse(what: str) -> NoReturn:
    raise AuditLogIsAppendOnly(f"The audit log is append-only: {what} is not allowed")


class AuditInterface(models.TextChoices):
    WEB = "web", "web pages"
    API = "api", "REST API"
    MCP = "mcp", "MCP server"
    ADMIN = "admin", "admin"
    WORKER = "worker", "worker"


class AuditEventQuerySet(models.QuerySet):
    """Refuses every bulk change. Django's own cascades use the plain base manager, so deleting
    a user still nulls `actor` (the row and its actor_label stay)."""

    def update(self, **kwargs: Any) -> NoReturn:
        _refuse("updating audit events")

    def delete(self) -> NoReturn:
        _refuse("deleting audit events")

    def bulk_update(self, objs: Any, fields: Any, batch_size: int | None = None) -> NoReturn:
        _refuse("updating audit events")

    def bulk_create(self, objs: Any, *args: Any, **kwargs: Any) -> list[Any]:
        if kwargs.get("update_conflicts"):
            _refuse("bulk_create(update_conflicts=True)")
        return super().bulk_create(objs, *args, **kwargs)


class AuditEvent(models.Model):
    """One agent action or human act, written once (agents_app.audit.audit_record) and never
    changed or deleted."""

    created_at = models.DateTimeField(default=timezone.now, db_index=True, editable=False)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name="user",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Empty for the worker or the system, or once the user was deleted.",
    )
    actor_label = models.CharField(
        "actor",
        max_length=150,
        help_text='The username at the time, or "worker" / "system"; kept if the user goes.',
    )
    interface = models.CharField(max_length=10, choices=AuditInterface.choices)
    action = models.CharField(max_length=50, help_text="e.g. llm.call, tool.call, run.cancel")
    # No database constraint and DO_NOTHING: deleting a run leaves its audit rows untouched,
    # run_id still holding the deleted run's number (event.run then raises DoesNotExist).
    run = models.ForeignKey(
        Run,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    target = models.CharField(
        max_length=200, blank=True, help_text="What was acted on: a tool, a server, a file."
    )
    details = models.JSONField(default=dict, blank=True)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} by {self.actor_label} ({self.interface})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        # An explicit pk would make Django try an UPDATE of that row first: refused as well.
        if not self._state.adding or self.pk is not None:
            _refuse("changing an audit event")
        kwargs["force_insert"] = True
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse("deleting an audit event")

    def as_json(self) -> dict[str, Any]:
        """The row as one JSON object, as the exports write it."""
        return {
            "id": self.pk,
            "created_at": self.created_at.isoformat(),
            "actor_id": self.actor_id,
            "actor": self.actor_label,
            "interface": self.interface,
            "action": self.action,
            "run_id": self.run_id,
            "target": self.target,
            "details": self.details,
        }


class KillSwitch(models.Model):
    """The platform's one kill switch (row 1). Engaged, every run pauses at its next step
    boundary and no run starts; released, the paused runs go on where they were."""

    engaged = models.BooleanField(default=False)
    reason = models.TextField(blank=True)
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    changed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "kill switch"
        verbose_name_plural = "kill switch"

    def __str__(self) -> str:
        return "Kill switch: engaged" if self.engaged else "Kill switch: released"

    @classmethod
    def is_engaged(cls) -> bool:
        return cls.objects.filter(pk=1, engaged=True).exists()

    @classmethod
    def current(cls) -> "KillSwitch":
        switch, _ = cls.objects.get_or_create(pk=1)
        return switch


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
