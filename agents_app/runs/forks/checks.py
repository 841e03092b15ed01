"""What a fork is asked for, checked (runs.forks): the step, the plan version, the edited
steps, the instruction; and where a run that does its own steps stood after step N."""

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.inputs import text_problem
from agents_app.engine.decide import DONE
from agents_app.models import (
    Plan,
    Run,
    Step,
    StepStatus,
    WorkspaceChange,
)
from agents_app.runs.journal_files import journal_point

INSTRUCTION_MAX_CHARS = 4000
OBJECTIVE_MAX_CHARS = 2000


def invalid(field: str, message: str, **details: Any) -> DomainError:
    return DomainError(ErrorCode.VALIDATION_ERROR, message, {"field": field, **details})


def step_number(after_step: Any) -> int:
    if isinstance(after_step, bool) or not isinstance(after_step, int | str):
        raise invalid("after_step", "after_step is a step number (1 is the first step)")
    try:
        number = int(after_step)
    except ValueError:
        raise invalid("after_step", "after_step is a step number (1 is the first step)") from None
    if number < 1:
        raise invalid("after_step", "after_step is a step number (1 is the first step)")
    return number


def source_plan(run: Run, plan_version: Any) -> Plan:
    plans = Plan.objects.filter(run=run)
    if plan_version is None:
        plan = plans.order_by("-version").first()
    elif isinstance(plan_version, bool) or not isinstance(plan_version, int):
        raise invalid("plan_version", "plan_version is a whole number (null: the latest)")
    else:
        plan = plans.filter(version=plan_version).first()
    if plan is None:
        raise invalid(
            "plan_version",
            f"Run {run.pk} has no plan version {plan_version}"
            if plan_version is not None
            else f"Run {run.pk} has no plan to fork",
        )
    return plan


def edited_steps(steps: Any, kept: int) -> list[str] | None:
    """The edited remaining steps' objectives, or None when they are not edited."""
    if steps is None:
        return None
    if not isinstance(steps, list) or not all(isinstance(s, str) for s in steps):
        raise invalid("steps", "steps is a list of the remaining steps' objectives")
    objectives = [" ".join(s.split()) for s in steps]
    objectives = [s for s in objectives if s]
    if not objectives:
        raise invalid("steps", "The edited remaining plan has no step")
    if kept + len(objectives) > settings.AGENT_MAX_STEPS:
        raise invalid(
            "steps",
            f"The fork would have {kept + len(objectives)} steps; at most "
            f"{settings.AGENT_MAX_STEPS} are allowed (AGENT_MAX_STEPS)",
            max_steps=settings.AGENT_MAX_STEPS,
        )
    for objective in objectives:
        problem = text_problem(objective)
        if problem is None and len(objective) > OBJECTIVE_MAX_CHARS:
            problem = f"is longer than {OBJECTIVE_MAX_CHARS} characters"
        if problem:
            raise invalid("steps", f"A step's objective {problem}")
    return objectives


def instruction_text(instruction: Any) -> str:
    if instruction is None:
        return ""
    if not isinstance(instruction, str):
        raise invalid("instruction", "instruction is text")
    text = instruction.strip()
    problem = text_problem(text)
    if problem is None and len(text) > INSTRUCTION_MAX_CHARS:
        problem = f"is longer than {INSTRUCTION_MAX_CHARS} characters"
    if problem:
        raise invalid("instruction", f"The instruction {problem}")
    return text


@dataclass(frozen=True)
class ForkPoint:
    """Where a source stood after the step a fork goes on after: the journal rows whose latest
    change per path was its workspace then (in the order they happened), and how many of the
    source's own journal rows the fork's journal takes over (`own`, in seq order)."""

    changes: list[WorkspaceChange]
    own: list[WorkspaceChange] = field(default_factory=list)


def checked_steps(source: Run, plan: Plan, number: int) -> list[Step]:
    """The plan's steps. VALIDATION_ERROR for a step that is not the plan's or did not
    complete, or one before it that has not ended."""
    steps = list(Step.objects.filter(plan=plan).order_by("index"))
    if number > len(steps):
        raise invalid(
            "after_step",
            f"Plan v{plan.version} of run {source.pk} has {len(steps)} steps, no step {number}",
            after_step=number,
        )
    step = steps[number - 1]
    if step.status != StepStatus.COMPLETED:
        raise invalid(
            "after_step",
            f"Step {number} is {step.status}: a fork goes on after a completed step",
            after_step=number,
        )
    if undone := [s.index + 1 for s in steps[: number - 1] if s.status not in DONE]:
        raise invalid(
            "after_step",
            f"Step {undone[0]} before it has not ended",
            after_step=number,
        )
    return steps


def in_flight(number: int, steps: list[int]) -> DomainError:
    """CONFLICT: other steps (an earlier one not ended yet, a later one started) were at work
    when step `number` ended, so what the run was after it alone was never there to fork from
    (their changes are mixed in, or cut in the middle)."""
    return DomainError(
        ErrorCode.CONFLICT,
        f"Step {steps[0]} was {'still' if steps[0] < number else 'already'} at work when "
        f"step {number} ended: what the run was "
        f"after step {number} alone was never there to fork from",
        {"after_step": number, "in_flight": steps},
    )


def journal_stopped(run: Run, number: int) -> DomainError:
    return DomainError(
        ErrorCode.CONFLICT,
        f"Run {run.pk}'s workspace journal stopped before step {number} ended (its quota or "
        "entry limit): its files after that step cannot be rebuilt",
        {"after_step": number, "run_id": run.pk},
    )


def own_fork_point(source: Run, plan: Plan, steps: list[Step], number: int) -> ForkPoint:
    """A run that does its steps itself (runs.task_recipe): its own journal up to the end of
    step `number` (runs.journal_files). CONFLICT where a later step was at work then, or the
    journal stopped before."""
    step = steps[number - 1]
    end = step.finished_at
    # An earlier step that ended after it, or a later one started before, was at work then:
    # the journal cut at its end holds part of that step's changes only.
    overlapping = [
        s.index + 1
        for s in steps
        if end is not None
        and s.index != step.index
        and (
            (s.index < step.index and s.finished_at is not None and s.finished_at > end)
            or (s.index > step.index and s.started_at is not None and s.started_at < end)
        )
    ]
    if overlapping:
        raise in_flight(number, overlapping)
    point = journal_point(run=source, after_step=number, plan=plan)
    if not point.complete:
        raise journal_stopped(source, number)
    changes = WorkspaceChange.objects.filter(run=source, seq__lte=point.seq).order_by("seq")
    own = list(changes)
    return ForkPoint(changes=own, own=own)
