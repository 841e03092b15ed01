"""Reads, always scoped to the user who asks."""

from typing import Any

from django.db.models import Prefetch, QuerySet

from agents_app.errors import DomainError
from agents_app.models import (
    Approval,
    ApprovalRule,
    ApprovalStatus,
    Plan,
    Run,
    RunEvent,
    Step,
    ToolCall,
    Webhook,
    WebhookDelivery,
)


def runs_for(user: Any) -> QuerySet[Run]:
    return Run.objects.filter(owner=user).select_related("task")


def run_get(*, user: Any, run_id: int) -> Run:
    """The user's run, or DomainError NOT_FOUND (also for another user's run)."""
    run = runs_for(user).filter(pk=run_id).first()
    if run is None:
        raise DomainError("NOT_FOUND", f"Run {run_id} not found", {"run_id": run_id})
    return run


def run_detail(*, user: Any, run_id: int) -> Run:
    """The run with its plans, their steps and each step's tool calls prefetched."""
    run = run_get(user=user, run_id=run_id)
    plans = Plan.objects.filter(run=run).prefetch_related(
        Prefetch(
            "steps",
            queryset=Step.objects.order_by("index").prefetch_related(
                Prefetch("tool_calls", queryset=ToolCall.objects.order_by("id"))
            ),
        )
    )
    run.plan_list = list(plans)
    return run


def run_events(*, run: Run, after: int = 0, limit: int = 500) -> list[RunEvent]:
    return list(RunEvent.objects.filter(run=run, seq__gt=after).order_by("seq")[:limit])


def current_plan(run: Run) -> Plan | None:
    return Plan.objects.filter(run=run).order_by("-version").first()


def agent_result(run: Run) -> dict[str, Any]:
    """Seed 000's AgentResult for a run, from the steps of its latest plan."""
    plan = current_plan(run)
    steps = list(plan.steps.order_by("index").prefetch_related("tool_calls")) if plan else []
    executed = []
    for step in steps:
        executed.append(
            {
                "step_index": step.index,
                "objective": step.objective,
                "status": step.status,
                "tool_outputs": {
                    call.tool: call.result if call.error == "" else {"error": call.error}
                    for call in step.tool_calls.all()
                    if call.attempt == step.retry_count
                },
                "output": step.output,
                "error_message": step.error or None,
                "retry_count": step.retry_count,
                "execution_time": (
                    (step.finished_at - step.started_at).total_seconds()
                    if step.started_at and step.finished_at
                    else None
                ),
            }
        )
    return {
        "run_id": run.pk,
        "task_description": run.task.text,
        "status": run.status,
        "success": run.status == "succeeded",
        "response": run.final_response,
        "executed_steps": executed,
        "execution_time": run.duration_seconds(),
        "replans": run.replans,
        "final_error": (
            {"code": run.error_code, "message": run.error_message} if run.error_code else None
        ),
        "usage": {
            "prompt_tokens": run.prompt_tokens,
            "completion_tokens": run.completion_tokens,
            "tool_calls": run.tool_calls_made,
        },
    }


def run_links(run: Run) -> dict[str, str]:
    """The API paths of a run, as the REST answers and webhook payloads give them."""
    base = f"/api/v1/runs/{run.pk}"
    return {
        "self": base,
        "events": f"{base}/events",
        "cancel": f"{base}/cancel",
        "restart": f"{base}/restart",
        "websocket": f"/ws/api/runs/{run.pk}/",
    }


def webhooks_for(user: Any) -> QuerySet[Webhook]:
    return Webhook.objects.filter(owner=user)


def webhook_get(*, user: Any, webhook_id: int) -> Webhook:
    """The user's webhook, or DomainError NOT_FOUND (also for another user's webhook)."""
    webhook = webhooks_for(user).filter(pk=webhook_id).first()
    if webhook is None:
        raise DomainError(
            "NOT_FOUND", f"Webhook {webhook_id} not found", {"webhook_id": webhook_id}
        )
    return webhook


def webhook_deliveries(*, webhook: Webhook) -> QuerySet[WebhookDelivery]:
    return WebhookDelivery.objects.filter(webhook=webhook).order_by("-created_at", "-id")


def approvals_for(user: Any) -> QuerySet[Approval]:
    """The approvals of the user's runs, newest first, with what the pages show of each."""
    return Approval.objects.filter(owner=user).select_related("run__task", "step", "decided_by")


def approval_get(*, user: Any, approval_id: int) -> Approval:
    """An approval `user` may see and decide (theirs, or any as staff); anyone else hears
    NOT_FOUND, never that it exists."""
    approval = (
        Approval.objects.select_related("run__task", "step", "decided_by")
        .filter(pk=approval_id)
        .first()
    )
    if approval is None or not approval.decidable_by(user):
        raise DomainError("NOT_FOUND", f"Approval {approval_id} not found")
    return approval


def approval_pending_for_run(run: Run) -> Approval | None:
    """The approval a parked run waits for (a run waits for one at a time)."""
    return (
        Approval.objects.filter(run=run, status=ApprovalStatus.PENDING)
        .select_related("run__task", "step")
        .order_by("-created_at", "-id")
        .first()
    )


def approval_rules_for(user: Any) -> QuerySet[ApprovalRule]:
    return ApprovalRule.objects.filter(owner=user).order_by("tool", "-created_at")
