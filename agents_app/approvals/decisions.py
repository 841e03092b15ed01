"""People deciding approvals, the rules that spare them asking again, and YOLO mode.

Each decision is one transaction under the run's row lock: the first valid decision wins and
a second one is a CONFLICT (409), so a call never runs twice because two people (or a person
and a timeout) answered at once. A decision that lets the run go on queues it again; any
worker continues it from its rows.
"""

from typing import Any

from django.conf import settings
from django.utils import timezone
from pydantic import ValidationError

from agents_app.approvals import selectors
from agents_app.approvals.patterns import PatternKind, call_hosts
from agents_app.approvals.presenters import approval_payload
from agents_app.approvals.rules import rule_create
from agents_app.core.audit import (
    APPROVAL_DECIDE,
    arguments_sha256,
    audit_record,
)
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.event_payloads import PlanCreatedPayload, ReplannedPayload
from agents_app.core.events import EventType
from agents_app.core.watch import signal_run
from agents_app.engine.plan_edits import EDITED
from agents_app.engine.schemas import PlanOutput
from agents_app.models import (
    DECISION_STATUS,
    Approval,
    ApprovalKind,
    ApprovalStatus,
    AuditInterface,
    Decision,
    Plan,
    Remember,
    RunStatus,
    Step,
    TimeoutStrategy,
    ToolCall,
    ToolCallStatus,
)
from agents_app.runs.lifecycle import cancel_request, finish, run_enqueue, skip_step
from agents_app.runs.writer import locked_run
from tools_app import registry
from tools_app.models import Tool

# A plan is approved, edited (modify: its steps), rejected with feedback for the planner (deny:
# a new plan), or its run cancelled.
PLAN_DECISIONS = frozenset({Decision.APPROVE, Decision.MODIFY, Decision.DENY, Decision.CANCEL})
FEEDBACK_MAX_CHARS = 2_000
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


def check_plan(arguments: Any) -> dict[str, Any]:
    """Edited plan steps ({"steps": [{objective, tool_names, depends_on}, …]}) as the planner's
    own answer is checked: at least one step, at most AGENT_MAX_STEPS, each with an
    objective, tools that exist, dependencies on earlier steps only. Raises
    INVALID_ARGUMENTS."""

    def refuse(message: str, **details: Any) -> DomainError:
        return DomainError(ErrorCode.INVALID_ARGUMENTS, message, {"field": "arguments", **details})

    if not isinstance(arguments, dict) or not isinstance(arguments.get("steps"), list):
        raise refuse('An edited plan is a JSON object {"steps": [{"objective": …}, …]}')
    try:
        plan = PlanOutput.model_validate({"steps": arguments["steps"]})
    except ValidationError as exc:
        problems = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3]]
        raise refuse(f"The edited plan is not valid: {'; '.join(problems)}") from None
    if len(plan.steps) > settings.AGENT_MAX_STEPS:
        raise refuse(f"A plan has at most {settings.AGENT_MAX_STEPS} steps")
    named = {name for step in plan.steps for name in step.tool_names}
    unknown = sorted(
        named - set(Tool.objects.filter(name__in=named).values_list("name", flat=True))
    )
    if unknown:
        raise refuse(f"No such tool: {', '.join(unknown)}", unknown=unknown)
    for index, step in enumerate(plan.steps):
        if not step.objective.strip():
            raise refuse(f"Step {index + 1} has no objective")
        if any(not 0 <= d < index for d in step.depends_on):
            raise refuse(f"Step {index + 1} may depend on earlier steps only")
    return plan.model_dump()


def _check_feedback(note: Any) -> str:
    if not isinstance(note, str) or not note.strip():
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            "Say what is wrong with the plan: the planner gets your feedback",
            {"field": "note"},
        )
    if len(note) > FEEDBACK_MAX_CHARS:
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            f"Feedback has at most {FEEDBACK_MAX_CHARS} characters",
            {"field": "note", "max_length": FEEDBACK_MAX_CHARS},
        )
    return note.strip()


def _check_edit_note(note: Any) -> str:
    if not note:
        return ""
    if not isinstance(note, str) or len(note) > FEEDBACK_MAX_CHARS:
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            f"A note with an edited plan is text of at most {FEEDBACK_MAX_CHARS} characters",
            {"field": "note", "max_length": FEEDBACK_MAX_CHARS},
        )
    return note.strip()


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
            "A plan is approved, edited (modify), rejected with feedback (deny) or its run "
            "cancelled",
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
    note: Any = "",
) -> Approval:
    """Decide a pending approval; returns it decided. Raises DomainError NOT_FOUND,
    VALIDATION_ERROR, INVALID_ARGUMENTS (modify), or CONFLICT when it was already decided.
    The caller checks `Approval.decidable_by` (actor None is the system: an expired timeout).
    On a plan, modify takes the edited steps as `arguments` (with an optional `note` saying
    why, which the verifier reads) and deny takes the feedback for the planner as `note`."""
    approval = Approval.objects.filter(pk=approval_id).first()
    # Every front end has read the approval already: only a row deleted meanwhile comes here.
    if approval is None:
        raise DomainError(ErrorCode.NOT_FOUND, f"Approval {approval_id} not found")
    _check_request(approval, decision, remember)
    final = approval.arguments
    is_plan = approval.kind == ApprovalKind.PLAN
    if decision == Decision.MODIFY:
        final = check_plan(arguments) if is_plan else check_arguments(approval, arguments)
    feedback = _check_feedback(note) if is_plan and decision == Decision.DENY else ""
    # An edited plan may say why: the verifier reads it with the steps (engine.plan_edits).
    edit_note = _check_edit_note(note) if is_plan and decision == Decision.MODIFY else ""
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
        approval.decision_arguments = (
            ({**final, "note": edit_note} if edit_note else final)
            if decision == Decision.MODIFY
            else {"feedback": feedback}
            if feedback
            else None
        )
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
        cancelled = (
            f"Cancelled at an approval by {actor.get_username() if actor else 'its timeout'}"
        )
        if w.run.status != RunStatus.WAITING_APPROVAL:
            _decided_aside(w, decision, cancelled)
            return approval
        if decision == Decision.CANCEL:
            w.set(cancel_requested=True)
            finish(w, RunStatus.CANCELLED, ErrorCode.CANCELLED, cancelled)
            return approval
        if is_plan and decision == Decision.DENY:
            _replan_for(w, approval, actor, feedback)
            return approval
        if is_plan and decision == Decision.MODIFY:
            _edited_plan(w, approval, actor, final, edit_note)
        if decision == Decision.SKIP and approval.step_id is not None:
            step = Step.objects.get(pk=approval.step_id)
            step.progress = None
            step.save(update_fields=["progress"])
            skip_step(w, step, "skipped at an approval")
        w.transition(RunStatus.RUNNING, approval_id=approval.pk, decision=decision)
        run_enqueue(run_id=w.run.pk)
    return approval


def _decided_aside(w: Any, decision: str, cancelled: str) -> None:
    """A decision on a call its run does not wait for: a step of a parallel plan held alone
    while its siblings run (the worker holds the run), or a run parked otherwise meanwhile
    (for a micro agent, paused). A cancel cancels the run: at once when nobody holds it, else
    at its worker's next checkpoint (its steps stop, the held one is cancelled). Any other
    decision is the worker's to act on when it comes to the step (worker.execution: a skip
    skips it, an approval runs the call), told now so that a worker running steps side by
    side looks at once (worker.parallel). A run stopped meanwhile has nothing to continue."""
    if w.run.is_terminal:
        return
    if decision == Decision.CANCEL:
        cancel_request(w, cancelled)
    else:
        signal_run(w.run.pk)


def _who(actor: Any) -> str:
    return actor.get_username() if actor else "the system"


def _replan_for(w: Any, approval: Approval, actor: Any, feedback: str) -> None:
    """A rejected plan: the planner makes a new version with the person's feedback (which,
    the task asking to see its plan, waits for approval again). Not one of the verifier's
    replans: it does not count against AGENT_MAX_REPLANS."""
    reason = f"{_who(actor)} rejected plan v{approval.arguments.get('version', '?')}: {feedback}"
    w.set(replan_reason=reason)
    w.event(
        EventType.REPLANNED, ReplannedPayload(replans=w.run.replans, reason=reason, by="person")
    )
    w.transition(RunStatus.PLANNING, approval_id=approval.pk, decision=Decision.DENY)
    run_enqueue(run_id=w.run.pk)


def _edited_plan(w: Any, approval: Approval, actor: Any, edited: dict[str, Any], note: str) -> None:
    """An edited plan is a new version, as the person wrote it; its steps run from the first.
    It reshapes the task: its raw plan says who edited it and their note, which the verifier
    and the evidence check read (runs.evidence.plan_edit)."""
    latest = Plan.objects.filter(run=w.run).order_by("-version").first()
    version = (latest.version if latest else 0) + 1
    reason = f"edited by {_who(actor)} at its approval" + (f": {note}" if note else "")
    raw = {**edited, EDITED: {"by": _who(actor), "note": note}}
    plan = Plan.objects.create(run=w.run, version=version, reason=reason, raw=raw)
    Step.objects.bulk_create(
        Step(
            plan=plan,
            run=w.run,
            index=index,
            objective=step["objective"],
            tool_names=step["tool_names"],
            reasoning=step["reasoning"],
            depends_on=step["depends_on"],
        )
        for index, step in enumerate(edited["steps"])
    )
    w.event(
        EventType.PLAN_CREATED,
        PlanCreatedPayload(version=version, steps=edited["steps"], edited_by=_who(actor)),
    )


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
    if remember == Remember.HOST:
        hosts = set(call_hosts(approval.arguments))
        if len(hosts) != 1:
            raise DomainError(
                ErrorCode.VALIDATION_ERROR,
                "Allowing a host needs a call that reaches one host",
                {"field": "remember", "hosts": sorted(hosts)[:10]},
            )
        rule_create(
            owner_id=approval.owner_id,
            tool=approval.tool,
            arguments=None,
            pattern_kind=PatternKind.HOST,
            pattern=hosts.pop(),
            actor=actor,
            interface=interface,
        )
        return
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
    note: str = "",
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
        note=note,
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
