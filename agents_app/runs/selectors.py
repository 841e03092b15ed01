"""Reads, always scoped to the user who asks."""

from typing import Any

from django.db.models import Prefetch, QuerySet

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.models import (
    Plan,
    Run,
    RunEvent,
    Step,
    ToolCall,
)


def runs_for(user: Any) -> QuerySet[Run]:
    return Run.objects.filter(owner=user).select_related("task", "profile")


def run_get(*, user: Any, run_id: int) -> Run:
    """The user's run, or DomainError NOT_FOUND (also for another user's run)."""
    run = runs_for(user).filter(pk=run_id).first()
    if run is None:
        raise DomainError(ErrorCode.NOT_FOUND, f"Run {run_id} not found", {"run_id": run_id})
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
