"""The worker's side of an approval: a call or a plan that needs a person parks the run in
`waiting_approval` (its lease released), records the Approval, announces it (event,
`approval.required` webhooks) and schedules its timeout."""

from datetime import timedelta
from functools import partial
from typing import Any

from django.db import transaction
from django.utils import timezone

from agents_app.approvals.policy import REASONING_MAX_CHARS, Ask, timeout_policy
from agents_app.approvals.presenters import approval_payload
from agents_app.core import dispatch
from agents_app.core.audit import APPROVAL_REQUEST, arguments_sha256, audit_record
from agents_app.core.events import EventType
from agents_app.engine.executor import AwaitApproval
from agents_app.models import (
    Approval,
    ApprovalKind,
    AuditInterface,
    Plan,
    RunStatus,
    Step,
    ToolCall,
    ToolCallStatus,
)
from agents_app.runs.writer import RunWriter
from agents_app.webhooks.services import APPROVAL_REQUIRED, webhooks_notify
from tools_app.registry import ApprovalLevel


def _request(w: RunWriter, approval: Approval) -> None:
    """The parking common to calls and plans: run state, event, audit, webhooks, expiry."""
    w.transition(RunStatus.WAITING_APPROVAL, approval_id=approval.pk)
    _announce(w, approval)


def _announce(w: RunWriter, approval: Approval) -> None:
    """The approval's event, audit row, webhooks and expiry."""
    payload = approval_payload(approval)
    w.event(EventType.APPROVAL_REQUIRED, payload)
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
    approval = _call_approval(w, step, wait, thinking)
    _request(w, approval)
    return approval


def hold_on_call(w: RunWriter, step: Step, wait: AwaitApproval, thinking: str) -> Approval:
    """Park only the step before a call that needs a person (its siblings of a parallel plan
    go on: worker.parallel parks the run once none can run): the Approval, announced, and the
    step's progress to resume from."""
    approval = _call_approval(w, step, wait, thinking)
    _announce(w, approval)
    return approval


def _call_approval(w: RunWriter, step: Step, wait: AwaitApproval, thinking: str) -> Approval:
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
        taint=[taint.as_json() for taint in ask.taints],
    )
    step.progress = {**wait.progress, "approval_id": approval.pk}
    step.save(update_fields=["progress"])
    ToolCall.objects.filter(pk=wait.handle.call_id).update(status=ToolCallStatus.WAITING_APPROVAL)
    return approval


def park_again(w: RunWriter, approval: Approval) -> None:
    """Park the run on an approval already announced (a step of a parallel plan held on it
    while its siblings ran)."""
    w.transition(RunStatus.WAITING_APPROVAL, approval_id=approval.pk)


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
    delay = max(0.0, (expires_at - timezone.now()).total_seconds())
    dispatch.send(dispatch.TaskName.EXPIRE_APPROVAL, approval_id, countdown=delay)
