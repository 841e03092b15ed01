"""Human in the loop: approvals of tool calls and plans, the rules that spare people from
asking twice, and each user's preferences (YOLO mode)."""

from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from agents_app.models.audit import AuditInterface
from agents_app.models.runs import Run, Step, ToolCall


class ApprovalKind(models.TextChoices):
    TOOL_CALL = "tool_call", "tool call"
    PLAN = "plan"


class Decision(models.TextChoices):
    """What a person (or an expired timeout) decided. `deny` refuses the call and lets the
    model go on without it; `skip` skips the step; `cancel` cancels the run."""

    APPROVE = "approve"
    MODIFY = "modify"
    SKIP = "skip"
    DENY = "deny"
    CANCEL = "cancel"


class ApprovalStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    MODIFIED = "modified", "approved with edited arguments"
    SKIPPED = "skipped"
    DENIED = "denied"
    CANCELLED = "cancelled", "run cancelled"
    # The run ended another way (stopped, failed) while the approval was pending.
    VOID = "void", "void (the run ended)"


DECISION_STATUS = {
    Decision.APPROVE: ApprovalStatus.APPROVED,
    Decision.MODIFY: ApprovalStatus.MODIFIED,
    Decision.SKIP: ApprovalStatus.SKIPPED,
    Decision.DENY: ApprovalStatus.DENIED,
    Decision.CANCEL: ApprovalStatus.CANCELLED,
}


class TimeoutStrategy(models.TextChoices):
    DENY = "deny", "deny the call"
    SKIP = "skip", "skip the step"
    CANCEL = "cancel", "cancel the run"


class Remember(models.TextChoices):
    NOTHING = "", "nothing"
    TOOL = "tool", "always allow this tool"
    CALL = "call", "allow this exact call again"
    HOST = "host", "allow this tool to reach this host"


class Approval(models.Model):
    """A tool call (or a plan) waiting for a person. Its run is parked in `waiting_approval`
    with no worker holding it; the first valid decision wins and queues the run again."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="approvals")
    # Denormalised from run.owner so every scoped read is one indexed filter.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="approvals"
    )
    kind = models.CharField(
        max_length=10, choices=ApprovalKind.choices, default=ApprovalKind.TOOL_CALL
    )
    step = models.ForeignKey(
        Step, null=True, blank=True, on_delete=models.CASCADE, related_name="approvals"
    )
    tool_call = models.OneToOneField(
        ToolCall, null=True, blank=True, on_delete=models.CASCADE, related_name="approval"
    )
    tool = models.CharField(max_length=200, blank=True)
    arguments = models.JSONField(default=dict, blank=True, help_text="As the model asked.")
    input_schema = models.JSONField(
        default=dict, blank=True, help_text="The tool's schema: edited arguments must fit it."
    )
    risk = models.CharField(max_length=20, blank=True, help_text="The call's risk class.")
    level = models.CharField(max_length=10, blank=True, help_text="The level that decided.")
    reason = models.TextField(blank=True, help_text="Why a person is asked.")
    reasoning = models.TextField(blank=True, help_text="The step's reasoning and the model's.")
    # The arguments that carry text from untrusted output and where it came from (issue 35):
    # [{argument, fragment, kind, source, tool_call_id, run_id}] (engine.taint.Taint).
    taint = models.JSONField(default=list, blank=True)
    status = models.CharField(
        max_length=10, choices=ApprovalStatus.choices, default=ApprovalStatus.PENDING
    )
    decision_arguments = models.JSONField(
        null=True, blank=True, help_text="The edited arguments of a `modify` decision."
    )
    remember = models.CharField(max_length=4, choices=Remember.choices, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    decided_via = models.CharField(max_length=10, choices=AuditInterface.choices, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    expired = models.BooleanField(default=False, help_text="Decided by its timeout.")
    expires_at = models.DateTimeField(null=True, blank=True)
    on_timeout = models.CharField(max_length=10, choices=TimeoutStrategy.choices, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["owner", "status", "-created_at"]),
            models.Index(fields=["status", "expires_at"]),
        ]

    def __str__(self) -> str:
        what = self.tool if self.kind == ApprovalKind.TOOL_CALL else "plan"
        return f"Approval {self.pk}: {what} ({self.status})"

    def decidable_by(self, user: Any) -> bool:
        """Only the run's owner or staff see and decide an approval."""
        return user.is_authenticated and (user.pk == self.owner_id or user.is_staff)

    @property
    def is_pending(self) -> bool:
        return self.status == ApprovalStatus.PENDING


class ApprovalRule(models.Model):
    """A user's standing permission: every call of `tool` (empty `arguments_sha256`), or one
    exact call of it, runs without asking while its level is `moderate`, and while the tool
    is the version the rule was made for (`tool_sha256`, an MCP tool's pin; blank for a
    builtin tool: tools_app.mcp.pins)."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="approval_rules"
    )
    tool = models.CharField(max_length=200)
    arguments_sha256 = models.CharField(
        max_length=64, blank=True, help_text="Empty: any call of the tool."
    )
    arguments = models.JSONField(null=True, blank=True, help_text="The exact call, for people.")
    tool_sha256 = models.CharField(
        max_length=64,
        blank=True,
        help_text="The pinned version of the MCP tool it was made for; blank: a builtin tool.",
    )
    # A rule narrowed to an argument pattern (approvals.patterns): the calls that reach one
    # host, touch paths under one prefix or run one command. Blank: the tool or exact call.
    pattern_kind = models.CharField(
        max_length=12,
        blank=True,
        choices=[("host", "host"), ("path_prefix", "path prefix"), ("command", "command")],
    )
    pattern = models.CharField(max_length=500, blank=True)
    created_via = models.CharField(max_length=10, choices=AuditInterface.choices)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["tool", "-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=[
                    "owner",
                    "tool",
                    "tool_sha256",
                    "arguments_sha256",
                    "pattern_kind",
                    "pattern",
                ],
                name="approval_rule_unique_per_pattern",
            )
        ]

    def __str__(self) -> str:
        scope = "exact call" if self.arguments_sha256 else "every call"
        return f"{self.tool} ({scope})"

    @property
    def is_exact(self) -> bool:
        return bool(self.arguments_sha256)

    @property
    def scope(self) -> str:
        """What the rule allows, in a person's words."""
        if self.pattern_kind:
            return f"calls whose {self.get_pattern_kind_display()} is {self.pattern}"
        return "this exact call" if self.is_exact else "every call"


class UserPreferences(models.Model):
    """Per-user settings. YOLO mode runs every call without asking; a user may turn it on only
    while they hold the `use_yolo_mode` permission, which only staff grant."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="agent_preferences"
    )
    yolo = models.BooleanField(default=False, help_text="Run every tool call without asking.")
    changed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "user preferences"
        permissions = [
            ("use_yolo_mode", "Can turn on YOLO mode (every tool call runs without asking)")
        ]

    def __str__(self) -> str:
        return f"Preferences of {self.user}"
