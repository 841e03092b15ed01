"""Asking people: which calls need a decision (policy), and parking a run on one.

The worker side only. A call is classified (tools_app.risk); `manual` always asks, `moderate`
asks unless the owner has a rule for it, `auto` runs, and YOLO mode (a staff-granted
permission the user turned on) runs everything. A call that asks parks its run: an Approval
row, the step's conversation saved on the Step, the run `waiting_approval`, an event, the
`approval.required` webhooks, and the worker returns. Decisions live in agents_app.decisions.
"""

from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from agents_app.audit import APPROVAL_REQUEST, arguments_sha256, audit_record
from agents_app.engine.executor import AwaitApproval
from agents_app.models import (
    Approval,
    ApprovalKind,
    ApprovalRule,
    AuditInterface,
    Plan,
    RunStatus,
    Step,
    ToolCall,
    ToolCallStatus,
    UserPreferences,
)
from agents_app.run_writer import RunWriter
from agents_app.webhooks import APPROVAL_REQUIRED, webhooks_notify
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
    rules = ApprovalRule.objects.filter(owner_id=owner_id, tool=spec.name)
    if rules.filter(arguments_sha256__in=["", arguments_sha256(arguments)]).exists():
        return None, "rule"
    return Ask(classification, "moderate: no rule of yours allows it", spec.input_schema), ""


def timeout_policy(task: Any) -> tuple[float, str]:
    """(seconds an approval waits, or 0 for ever; what its expiry decides)."""
    seconds = task.approval_timeout if task.approval_timeout is not None else None
    if seconds is None:
        seconds = settings.APPROVAL_TIMEOUT
    return float(seconds), task.approval_on_timeout or settings.APPROVAL_TIMEOUT_STRATEGY


def approval_payload(approval: Approval) -> dict[str, Any]:
    """An approval as events, REST and webhooks show it."""
    return {
        "id": approval.pk,
        "run_id": approval.run_id,
        "kind": approval.kind,
        "status": approval.status,
        "tool": approval.tool,
        "arguments": approval.arguments,
        "risk": approval.risk,
        "level": approval.level,
        "reason": approval.reason,
        "reasoning": approval.reasoning,
        "step_index": approval.step.index if approval.step_id else None,
        "tool_call_id": approval.tool_call_id,
        "decision_arguments": approval.decision_arguments,
        "decided_by": approval.decided_by.get_username() if approval.decided_by else None,
        "decided_via": approval.decided_via or None,
        "decided_at": approval.decided_at.isoformat() if approval.decided_at else None,
        "expired": approval.expired,
        "expires_at": approval.expires_at.isoformat() if approval.expires_at else None,
        "on_timeout": approval.on_timeout or None,
        "created_at": approval.created_at.isoformat(),
        "links": {
            "self": f"/api/v1/approvals/{approval.pk}",
            "decide": f"/api/v1/approvals/{approval.pk}",
            "run": f"/api/v1/runs/{approval.run_id}",
            "page": f"/runs/{approval.run_id}/",
        },
    }


def _request(w: RunWriter, approval: Approval) -> None:
    """The parking common to calls and plans: run state, event, audit, webhooks, expiry."""
    w.set(parked_at=timezone.now())
    w.transition(RunStatus.WAITING_APPROVAL, approval_id=approval.pk)
    payload = approval_payload(approval)
    w.event("approval_required", payload)
    audit_record(
        action=APPROVAL_REQUEST,
        interface=AuditInterface.WORKER,
        run=w.run,
        target=approval.tool or "plan",
        details={
            "approval_id": approval.pk,
            "kind": approval.kind,
            "tool_call_id": approval.tool_call_id,
            "arguments_sha256": arguments_sha256(approval.arguments),
            "risk": approval.risk,
            "level": approval.level,
            "expires_at": payload["expires_at"],
        },
    )
    webhooks_notify(
        user_id=w.run.owner_id,
        event_type=APPROVAL_REQUIRED,
        payload={"approval": payload, "task": w.run.task.text},
    )
    if approval.expires_at is not None:
        transaction.on_commit(partial(schedule_expiry, approval.pk, approval.expires_at))


def _new_approval(w: RunWriter, **fields: Any) -> Approval:
    seconds, strategy = timeout_policy(w.run.task)
    expires_at = timezone.now() + timedelta(seconds=seconds) if seconds > 0 else None
    return Approval.objects.create(
        run=w.run,
        owner_id=w.run.owner_id,
        expires_at=expires_at,
        on_timeout=strategy if expires_at else "",
        **fields,
    )


def park_on_call(w: RunWriter, step: Step, wait: AwaitApproval, thinking: str) -> Approval:
    """Park the run before a call that needs a person; the step resumes from `wait.progress`."""
    ask: Ask = wait.ask
    reasoning = "\n\n".join(part for part in (step.reasoning, thinking) if part)
    approval = _new_approval(
        w,
        kind=ApprovalKind.TOOL_CALL,
        step=step,
        tool_call_id=wait.handle.call_id,
        tool=wait.tool,
        arguments=wait.arguments,
        input_schema=ask.schema,
        risk=ask.classification.risk,
        level=ask.classification.level,
        reason="; ".join((ask.reason, *ask.classification.reasons)),
        reasoning=reasoning[:REASONING_MAX_CHARS],
    )
    step.progress = {**wait.progress, "approval_id": approval.pk}
    step.save(update_fields=["progress"])
    ToolCall.objects.filter(pk=wait.handle.call_id).update(status=ToolCallStatus.WAITING_APPROVAL)
    _request(w, approval)
    return approval


def park_on_plan(w: RunWriter, plan: Plan) -> Approval:
    """The task asked to see its plan first: no step runs before a go."""
    approval = _new_approval(
        w,
        kind=ApprovalKind.PLAN,
        arguments={"version": plan.version, "steps": plan.raw.get("steps", [])},
        level=ApprovalLevel.MANUAL,
        reason="the task asked to approve its plan before any step runs",
    )
    _request(w, approval)
    return approval


def schedule_expiry(approval_id: int, expires_at: Any) -> None:
    from agents_app.tasks import expire_approval

    delay = max(0.0, (expires_at - timezone.now()).total_seconds())
    expire_approval.apply_async((approval_id,), countdown=delay)
