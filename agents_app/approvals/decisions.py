"""People deciding approvals, the rules that spare them asking again, and YOLO mode.

Each decision is one transaction under the run's row lock: the first valid decision wins and
a second one is a CONFLICT (409), so a call never runs twice because two people (or a person
and a timeout) answered at once. A decision that lets the run go on queues it again; any
worker continues it from its rows.
"""

from typing import Any

from django.utils import timezone

from agents_app.approvals import selectors
from agents_app.approvals.presenters import approval_payload
from agents_app.approvals.rules import rule_create
from agents_app.core.audit import (
    APPROVAL_DECIDE,
    arguments_sha256,
    audit_record,
)
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.events import EventType
from agents_app.models import (
    DECISION_STATUS,
    Approval,
    ApprovalKind,
    ApprovalStatus,
    AuditInterface,
    Decision,
    Remember,
    RunStatus,
    Step,
    TimeoutStrategy,
    ToolCall,
    ToolCallStatus,
)
from agents_app.runs.lifecycle import finish, run_enqueue, skip_step
from agents_app.runs.writer import locked_run
from tools_app import registry

PLAN_DECISIONS = frozenset({Decision.APPROVE, Decision.CANCEL})
EXPIRY_DECISION = {
    TimeoutStrategy.DENY: Decision.DENY,
    TimeoutStrategy.SKIP: Decision.SKIP,
    TimeoutStrategy.CANCEL: Decision.CANCEL,
}


def check_arguments(approval: Approval, arguments: Any) -> dict[str, Any]:
    """Edited arguments, validated against the tool's schema as the worker offered it.
    Raises INVALID_ARGUMENTS."""
    if not isinstance(arguments, dict):
        raise DomainError(
            ErrorCode.INVALID_ARGUMENTS,
            "A modify decision needs `arguments`, a JSON object",
            {"field": "arguments"},
        )
    registry.check_arguments(approval.tool, approval.input_schema, arguments)
    return arguments


def _check_request(approval: Approval, decision: str, remember: str) -> None:
    if decision not in Decision.values:
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            f"Unknown decision {decision!r}",
            {"field": "decision", "allowed": Decision.values},
        )
    if approval.kind == ApprovalKind.PLAN and decision not in PLAN_DECISIONS:
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            "A plan is approved or its run cancelled",
            {"field": "decision", "allowed": sorted(PLAN_DECISIONS)},
        )
    if remember not in Remember.values:
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            f"Unknown remember {remember!r}",
            {"field": "remember", "allowed": [v for v in Remember.values if v]},
        )
    if remember and (decision != Decision.APPROVE or approval.kind != ApprovalKind.TOOL_CALL):
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            "Only an approved tool call can be remembered",
            {"field": "remember"},
        )


def approval_decide(
    *,
    approval_id: int,
    decision: str,
    actor: Any,
    interface: str,
    arguments: Any = None,
    remember: str = "",
    expired: bool = False,
) -> Approval:
    """Decide a pending approval; returns it decided. Raises DomainError NOT_FOUND,
    VALIDATION_ERROR, INVALID_ARGUMENTS (modify), or CONFLICT when it was already decided.
    The caller checks `Approval.decidable_by` (actor None is the system: an expired timeout)."""
    approval = Approval.objects.filter(pk=approval_id).first()
    if approval is None:
        raise DomainError(ErrorCode.NOT_FOUND, f"Approval {approval_id} not found")
    _check_request(approval, decision, remember)
    final = approval.arguments
    if decision == Decision.MODIFY:
        final = check_arguments(approval, arguments)
    with locked_run(approval.run_id) as w:
        approval = Approval.objects.select_for_update().get(pk=approval_id)
        if not approval.is_pending:
            by = approval.decided_by.get_username() if approval.decided_by else "the system"
            raise DomainError(
                ErrorCode.CONFLICT,
                f"Approval {approval_id} was already decided: {approval.status}"
                + ("" if approval.status == ApprovalStatus.VOID else f" by {by}"),
                {"status": approval.status, "approval": approval_payload(approval)},
            )
        now = timezone.now()
        approval.status = DECISION_STATUS[decision]
        approval.decided_by = actor
        approval.decided_via = interface
        approval.decided_at = now
        approval.expired = expired
        approval.remember = remember
        approval.decision_arguments = final if decision == Decision.MODIFY else None
        approval.save()
        _apply_to_call(approval, decision, final)
        w.event(EventType.APPROVAL_DECIDED, approval_payload(approval))
        audit_record(
            action=APPROVAL_DECIDE,
            interface=interface,
            actor=actor,
            run=w.run,
            target=approval.tool or "plan",
            details={
                "approval_id": approval.pk,
                "kind": approval.kind,
                "decision": decision,
                "arguments_sha256": arguments_sha256(final),
                "remember": remember,
                "expired": expired,
            },
        )
        if remember:
            _remember(approval, remember, actor, interface)
        if w.run.status != RunStatus.WAITING_APPROVAL:
            return approval  # the run was stopped meanwhile: nothing to continue
        if decision == Decision.CANCEL:
            who = actor.get_username() if actor else "its timeout"
            w.set(cancel_requested=True)
            finish(
                w, RunStatus.CANCELLED, ErrorCode.CANCELLED, f"Cancelled at an approval by {who}"
            )
            return approval
        if decision == Decision.SKIP and approval.step_id is not None:
            step = Step.objects.get(pk=approval.step_id)
            step.progress = None
            step.save(update_fields=["progress"])
            skip_step(w, step, "skipped at an approval")
        w.transition(RunStatus.RUNNING, approval_id=approval.pk, decision=decision)
        run_enqueue(run_id=w.run.pk)
    return approval


def _apply_to_call(approval: Approval, decision: str, final: dict[str, Any]) -> None:
    if approval.tool_call_id is None:
        return
    calls = ToolCall.objects.filter(pk=approval.tool_call_id)
    if decision in (Decision.APPROVE, Decision.MODIFY):
        calls.update(status=ToolCallStatus.RUNNING, arguments=final)
    elif decision == Decision.DENY:
        calls.update(status=ToolCallStatus.DENIED, error="denied at an approval")
    else:
        calls.update(status=ToolCallStatus.SKIPPED, error=f"{decision} at an approval")


def _remember(approval: Approval, remember: str, actor: Any, interface: str) -> None:
    exact = remember == Remember.CALL
    rule_create(
        owner_id=approval.owner_id,
        tool=approval.tool,
        arguments=approval.arguments if exact else None,
        actor=actor,
        interface=interface,
    )


def approval_decide_as(
    *,
    user: Any,
    approval_id: int,
    decision: str,
    arguments: Any = None,
    remember: str = "",
    interface: str,
) -> Approval:
    """A person's decision sent through an API (REST, MCP): NOT_FOUND unless the approval is
    theirs (or they are staff), and `arguments` only with modify."""
    selectors.approval_get(user=user, approval_id=approval_id)
    if arguments is not None and decision != Decision.MODIFY:
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            "`arguments` go with a modify decision only",
            {"field": "arguments"},
        )
    return approval_decide(
        approval_id=approval_id,
        decision=decision,
        arguments=arguments,
        remember=remember,
        actor=user,
        interface=interface,
    )


def approvals_decide_many(
    *, approval_ids: list[int], decision: str, actor: Any, interface: str
) -> tuple[list[Approval], list[dict[str, Any]]]:
    """Bulk: each approval decided in its own transaction (one run lock at a time). Returns
    (decided, refused), refused as {id, code, message}."""
    decided, refused = [], []
    for approval_id in approval_ids:
        try:
            approval = Approval.objects.filter(pk=approval_id).first()
            if approval is None or not approval.decidable_by(actor):
                raise DomainError(ErrorCode.NOT_FOUND, f"Approval {approval_id} not found")
            decided.append(
                approval_decide(
                    approval_id=approval_id, decision=decision, actor=actor, interface=interface
                )
            )
        except DomainError as exc:
            refused.append({"id": approval_id, "code": exc.code, "message": exc.message})
    return decided, refused


def approval_expire(approval_id: int) -> float:
    """Let a pending approval's timeout decide once it is due. Returns seconds still to wait
    (0 when it was decided now, or needs nothing more)."""
    approval = Approval.objects.filter(pk=approval_id).first()
    if approval is None or not approval.is_pending or approval.expires_at is None:
        return 0.0
    remaining = (approval.expires_at - timezone.now()).total_seconds()
    if remaining > 0:
        return remaining
    decision = EXPIRY_DECISION.get(approval.on_timeout, Decision.DENY)
    if approval.kind == ApprovalKind.PLAN:
        decision = Decision.CANCEL
    try:
        approval_decide(
            approval_id=approval_id,
            decision=decision,
            actor=None,
            interface=AuditInterface.WORKER,
            expired=True,
        )
    except DomainError as exc:
        if exc.code != ErrorCode.CONFLICT:  # a person was faster: their decision stands
            raise
    return 0.0


def approvals_expire_due() -> list[int]:
    """Decide every overdue approval (a worker coming up sweeps what a lost timer missed)."""
    due = list(
        Approval.objects.filter(
            status=ApprovalStatus.PENDING, expires_at__lte=timezone.now()
        ).values_list("pk", flat=True)
    )
    for approval_id in due:
        approval_expire(approval_id)
    return due


# --- rules -----------------------------------------------------------------------------------


# --- YOLO mode -------------------------------------------------------------------------------
