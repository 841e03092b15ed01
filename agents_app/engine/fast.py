"""The fast path: a short task runs as one step with every tool and a short prompt, without
asking a planner or a verifier. Small models have less to get wrong that way.

It is still a run of the one engine: the plan is a stored Plan with one Step, the run passes
through planning, running and verifying, and only the two questions a model would answer
are answered here instead: what the plan is, and whether it worked.
"""

from dataclasses import dataclass
from typing import Any, Protocol

from agents_app.core.errors import ErrorCode
from agents_app.engine.schemas import PlannedStep, PlanOutput, VerificationOutput
from agents_app.engine.states import StepStatus

# The key of Plan.raw that marks a fast-path plan.
FAST_PATH = "fast_path"


def takes_fast_path(*, text: str, option: bool | None, max_chars: int) -> bool:
    """Whether a task runs directly: the task's own option when it has one (True / False),
    else whether its text is at most `max_chars` characters (0: never)."""
    if option is not None:
        return option
    return max_chars > 0 and len(text.strip()) <= max_chars


def fast_plan(*, task: str, tool_names: list[str]) -> PlanOutput:
    """One step: the task itself, with every offered tool."""
    return PlanOutput(steps=[PlannedStep(objective=task, tool_names=tool_names, reasoning="")])


def fast_plan_raw(plan: PlanOutput) -> dict[str, Any]:
    """What Plan.raw holds for a fast-path plan."""
    return {FAST_PATH: True, **plan.model_dump()}


def is_fast_plan(raw: dict[str, Any] | None) -> bool:
    return bool(raw) and raw.get(FAST_PATH) is True


@dataclass(frozen=True)
class FastVerdict:
    """A verdict derived from the one step, in the verifier's shape, and the code a run that
    cannot go on ends with."""

    verdict: VerificationOutput
    error_code: ErrorCode


class StepRecord(Protocol):
    """What the verdict reads of the step (a Step row has these)."""

    status: str
    output: str
    error: str  # `CODE: message` when it failed


def fast_verdict(step: StepRecord, *, can_replan: bool) -> FastVerdict:
    """Complete when the step completed (the answer is its output: finish_task's answer when
    it called it). Otherwise a replan when one remains, so the planner takes over with the
    history, or the end of the run with the step's own error code."""
    if step.status == StepStatus.COMPLETED:
        verdict = VerificationOutput(
            task_complete=True, reasoning="the direct step completed", response=step.output
        )
        return FastVerdict(verdict, ErrorCode.VERIFICATION_FAILED)
    code, message = split_step_error(step.error)
    reason = f"the direct attempt did not finish: {step.error or step.status}"
    verdict = VerificationOutput(
        task_complete=False,
        reasoning=reason if can_replan else message or reason,
        should_replan=can_replan,
    )
    return FastVerdict(verdict, code)


def split_step_error(error: str) -> tuple[ErrorCode, str]:
    """A step's stored error (`CODE: message`) as its code and message; an error without a
    known code (a skipped step's reason) is VERIFICATION_FAILED."""
    head, separator, rest = error.partition(": ")
    try:
        return ErrorCode(head), rest if separator else ""
    except ValueError:
        return ErrorCode.VERIFICATION_FAILED, error
