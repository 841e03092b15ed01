"""Asking people: which calls need a decision (policy), and parking a run on one.

The worker side only. A call is classified (tools_app.risk); `manual` always asks, `moderate`
asks unless the owner has a rule for it, `auto` runs, and YOLO mode (a staff-granted
permission the user turned on) runs everything. A call that asks parks its run: an Approval
row, the step's conversation saved on the Step, the run `waiting_approval`, an event, the
`approval.required` webhooks, and the worker returns. Decisions live in approvals.decisions.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model

from agents_app.core.audit import arguments_sha256
from agents_app.models import (
    ApprovalRule,
    UserPreferences,
)
from tools_app.mcp.pins import tool_pinned_sha256
from tools_app.registry import ApprovalLevel, ToolSpec
from tools_app.risk import Classification, classify_call

YOLO_PERMISSION = "agents_app.use_yolo_mode"
REASONING_MAX_CHARS = 8000


@dataclass(frozen=True)
class Ask:
    """Why a call waits for a person."""

    classification: Classification
    reason: str
    schema: dict[str, Any]


def yolo_active(user: Any) -> bool:
    """YOLO runs only while the user turned it on and still holds the permission."""
    if user is None or not user.is_active:
        return False
    on = UserPreferences.objects.filter(user=user, yolo=True).exists()
    return on and user.has_perm(YOLO_PERMISSION)


def approval_policy(owner_id: int, spec: ToolSpec, arguments: dict[str, Any], workspace: Path):
    """(Ask or None, how the call was let through: auto | rule | yolo)."""
    classification = classify_call(spec, arguments, workspace)
    if not classification.needs_person:
        return None, "auto"
    owner = get_user_model().objects.filter(pk=owner_id).first()
    if yolo_active(owner):
        return None, "yolo"
    if classification.level == ApprovalLevel.MANUAL:
        return Ask(classification, "manual: this call always asks", spec.input_schema), ""
    # A rule lets through only the version of the tool it was made for (tools_app.mcp.pins).
    version = tool_pinned_sha256(spec.name)
    rules = ApprovalRule.objects.filter(owner_id=owner_id, tool=spec.name, tool_sha256=version)
    if (
        version is not None
        and rules.filter(arguments_sha256__in=["", arguments_sha256(arguments)]).exists()
    ):
        return None, "rule"
    return Ask(classification, "moderate: no rule of yours allows it", spec.input_schema), ""


def timeout_policy(task: Any) -> tuple[float, str]:
    """(seconds an approval waits, or 0 for ever; what its expiry decides)."""
    seconds = task.approval_timeout if task.approval_timeout is not None else None
    if seconds is None:
        seconds = settings.APPROVAL_TIMEOUT
    return float(seconds), task.approval_on_timeout or settings.APPROVAL_TIMEOUT_STRATEGY
