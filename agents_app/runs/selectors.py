"""Reads, always scoped to the user who asks."""

from dataclasses import dataclass
from typing import Any

from django.db.models import Prefetch, QuerySet

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.events import EventType
from agents_app.engine.plan_edits import EDITED
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


@dataclass(frozen=True)
class PlanReplacements:
    """How often a run's plan was replaced, and by whom: edited by a person at its approval,
    rejected by a person (the planner made a new one), or asked for by the verifier (the
    replans counted against AGENT_MAX_REPLANS)."""

    edited: int
    rejected: int
    verifier: int

    @property
    def total(self) -> int:
        return self.edited + self.rejected + self.verifier

    @property
    def by_people(self) -> int:
        return self.edited + self.rejected


def plan_replacements(run: Run, plans: list[Plan] | None = None) -> PlanReplacements:
    """Counted from the rows (no counter of its own): the plan versions a person edited (from
    `plans`, every plan of the run, when the caller has them), the `replanned` events of a
    person's rejection, and `run.replans`."""
    if plans is None:
        edited = Plan.objects.filter(run=run, raw__has_key=EDITED).count()
    else:
        edited = sum(1 for plan in plans if isinstance(plan.raw, dict) and EDITED in plan.raw)
    return PlanReplacements(
        edited=edited,
        rejected=RunEvent.objects.filter(
            run=run, type=EventType.REPLANNED, payload__by="person"
        ).count(),
        verifier=run.replans,
    )
