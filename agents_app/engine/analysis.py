"""Task analysis (seed 000's AgentFactory): which capabilities and domain a task needs, so the
planner sees only the tools that matter."""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agents_app.core.errors import ErrorCode
from agents_app.engine.hooks import EngineHooks, StreamPhase
from agents_app.engine.llm import LLMProvider
from agents_app.engine.structured import ask_structured
from tools_app.registry import ToolSpec

ALWAYS_OFFERED = frozenset({"finish_task"})


class TaskAnalysis(BaseModel):
    model_config = ConfigDict(extra="ignore")

    capabilities: list[str] = Field(default_factory=list)
    domain: str = ""


def analysis_messages(task: str, context: dict[str, Any], tools: list[ToolSpec]) -> list[dict]:
    capabilities = sorted({c for t in tools for c in t.capabilities})
    domains = sorted({t.domain for t in tools})
    system = (
        "AGENTDESK:ANALYZE\nAnalyze the task and name what it needs. Choose capabilities only "
        f"from: {', '.join(capabilities)}. Choose the primary domain from: {', '.join(domains)}.\n"
        'Answer with JSON only: {"capabilities": [str], "domain": str}'
    )
    user = f"Task: {task}"
    if context:
        user += f"\nContext keys: {', '.join(sorted(context))}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def select_tools(tools: list[ToolSpec], analysis: TaskAnalysis) -> list[ToolSpec]:
    """Tools with a named capability or in the named domain, plus finish_task; all tools when
    that leaves nothing to work with."""
    wanted = {c.upper() for c in analysis.capabilities}
    chosen = [
        t
        for t in tools
        if t.capabilities & wanted or t.domain == analysis.domain or t.name in ALWAYS_OFFERED
    ]
    return chosen if any(t.name not in ALWAYS_OFFERED for t in chosen) else tools


def analyze_task(
    *,
    provider: LLMProvider,
    hooks: EngineHooks,
    task: str,
    context: dict[str, Any],
    tools: list[ToolSpec],
    timeout: float,
    max_tokens: int | None = None,
) -> TaskAnalysis:
    """Raises DomainError (INVALID_PLAN / PLANNING_TIMEOUT) or LLMError; callers fall back to
    offering every tool."""
    return ask_structured(
        provider=provider,
        hooks=hooks,
        messages=analysis_messages(task, context, tools),
        model=TaskAnalysis,
        phase=StreamPhase.ANALYSIS,
        timeout=timeout,
        fail_code=ErrorCode.INVALID_PLAN,
        max_tokens=max_tokens,
        timeout_code=ErrorCode.PLANNING_TIMEOUT,
    )
