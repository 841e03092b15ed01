"""Planning: the model turns a task into validated steps."""

from typing import Any

from agents_app.core.errors import ErrorCode
from agents_app.engine.hooks import EngineHooks, StreamPhase
from agents_app.engine.llm import LLMProvider
from agents_app.engine.prompts import plan_messages
from agents_app.engine.schemas import PlanOutput
from agents_app.engine.structured import ask_structured
from tools_app.registry import ToolSpec

# Bounds the plan schema sets, so a model that repeats itself stops at a sensible length.
OBJECTIVE_CHARS = 300
REASONING_CHARS = 300


def plan_schema(tool_names: list[str], max_steps: int) -> dict[str, Any]:
    """The plan's JSON schema for this call: tools only from `tool_names` (an enum), at most
    `max_steps` steps, bounded strings and lists, no descriptions to copy. A server that keeps
    to a schema (llama.cpp's grammar, OpenAI's structured output) cannot name another tool."""
    names = sorted(set(tool_names))
    tools: dict[str, Any] = (
        {"type": "array", "items": {"enum": names}, "maxItems": len(names)}
        if names
        else {"type": "array", "maxItems": 0}
    )
    step = {
        "type": "object",
        "properties": {
            "objective": {"type": "string", "minLength": 1, "maxLength": OBJECTIVE_CHARS},
            "tool_names": tools,
            "depends_on": {
                "type": "array",
                "items": {"type": "integer", "minimum": 0, "maximum": max(0, max_steps - 2)},
                "maxItems": max_steps - 1,
            },
            "reasoning": {"type": "string", "maxLength": REASONING_CHARS},
        },
        "required": ["objective", "tool_names"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "steps": {"type": "array", "items": step, "minItems": 1, "maxItems": max_steps},
            "parallel": {"type": "boolean"},
        },
        "required": ["steps"],
        "additionalProperties": False,
    }


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
    max_tokens: int | None = None,
) -> PlanOutput:
    """Return a plan whose tools exist and whose dependencies point backwards: a dependency
    on the step itself or a later one means nothing in an ordered plan, so it is dropped
    rather than sent back. Raises DomainError PLANNING_FAILED / PLANNING_TIMEOUT /
    ANSWER_TOO_LONG, or LLMError."""
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
            step.depends_on = sorted({d for d in step.depends_on if 0 <= d < index})

    return ask_structured(
        provider=provider,
        hooks=hooks,
        messages=plan_messages(
            task=task, context=context, tools=tools, max_steps=max_steps, history=history
        ),
        model=PlanOutput,
        phase=StreamPhase.PLANNING,
        timeout=timeout,
        fail_code=ErrorCode.PLANNING_FAILED,
        timeout_code=ErrorCode.PLANNING_TIMEOUT,
        check=check,
        max_tokens=max_tokens,
        schema=plan_schema([t.name for t in tools], max_steps),
    )
