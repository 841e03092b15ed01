"""Planning: the model turns a task into validated steps."""

from typing import Any

from agents_app.core.errors import ErrorCode
from agents_app.engine.hooks import EngineHooks
from agents_app.engine.llm import LLMProvider
from agents_app.engine.prompts import plan_messages
from agents_app.engine.schemas import PlanOutput
from agents_app.engine.structured import ask_structured
from tools_app.registry import ToolSpec


def make_plan(
    *,
    provider: LLMProvider,
    hooks: EngineHooks,
    task: str,
    context: dict[str, Any],
    tools: list[ToolSpec],
    max_steps: int,
    timeout: float,
    history: str = "",
) -> PlanOutput:
    """Return a plan whose tools exist and whose dependencies point backwards.
    Raises DomainError PLANNING_FAILED / PLANNING_TIMEOUT, or LLMError."""
    known = {t.name for t in tools}

    def check(plan: PlanOutput) -> None:
        if len(plan.steps) > max_steps:
            raise ValueError(
                f"the plan has {len(plan.steps)} steps; at most {max_steps} are allowed"
            )
        for index, step in enumerate(plan.steps):
            unknown = sorted(set(step.tool_names) - known)
            if unknown:
                raise ValueError(
                    f"step {index} names unknown tools {unknown}; available: {sorted(known)}"
                )
            bad = [d for d in step.depends_on if not 0 <= d < index]
            if bad:
                raise ValueError(
                    f"step {index} depends on {bad}; a step may only depend on earlier steps (0-based)"
                )

    return ask_structured(
        provider=provider,
        hooks=hooks,
        messages=plan_messages(
            task=task, context=context, tools=tools, max_steps=max_steps, history=history
        ),
        model=PlanOutput,
        phase="planning",
        timeout=timeout,
        fail_code=ErrorCode.PLANNING_FAILED,
        timeout_code=ErrorCode.PLANNING_TIMEOUT,
        check=check,
    )
