"""Task analysis (seed 000's AgentFactory): which capabilities and domain a task needs, so the
planner sees only the tools that matter. When the analysis fails (a model that runs out of
room, a wire error), `bounded_offer` stands in for it: the tools whose descriptions fit the
model's context window, so a small model's planner is not handed a list it cannot read."""

import math
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agents_app.core.errors import ErrorCode
from agents_app.engine.hooks import EngineHooks, StreamPhase
from agents_app.engine.llm import LLMProvider
from agents_app.engine.prompts import plan_messages, tool_catalog
from agents_app.engine.structured import ask_structured
from tools_app.registry import ToolSpec

ALWAYS_OFFERED = frozenset({"finish_task"})
# The cheap estimate the chat's condenser uses too: about 4 characters a token.
CHARS_PER_TOKEN = 4
# What of the room left in the window the tool list may fill: the estimate is rough (code and
# non-Latin text take more tokens), and the planner's answer must fit beside it.
CATALOG_SHARE = 0.75
WORD = re.compile(r"\w{3,}")


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


def catalog_room(
    *, window: int, max_tokens: int | None, task: str, context: dict[str, Any], max_steps: int
) -> int:
    """The tokens the planner's tool list may take in a `window`-token context: what the plan
    prompt without tools and the plan's answer (`max_tokens`) leave, times CATALOG_SHARE."""
    bare = plan_messages(task=task, context=context, tools=[], max_steps=max_steps, history="")
    used = sum(_tokens(m["content"]) for m in bare) + (max_tokens or 0)
    return max(0, int((window - used) * CATALOG_SHARE))


def bounded_offer(tools: list[ToolSpec], *, task: str, room: int) -> list[ToolSpec]:
    """The tools whose catalog lines fit in `room` tokens, in the registry's order: those
    sharing most words with the task chosen first, finish_task always, and at least one tool
    besides it, so the planner has something to plan with."""
    words = set(WORD.findall(task.lower()))

    def shared(tool: ToolSpec) -> int:
        return len(words & set(WORD.findall(f"{tool.name} {tool.description}".lower())))

    kept = {t.name for t in tools if t.name in ALWAYS_OFFERED}
    left = room - sum(_tokens(tool_catalog([t])) for t in tools if t.name in kept)
    others = sorted((t for t in tools if t.name not in kept), key=shared, reverse=True)
    for tool in others:
        cost = _tokens(tool_catalog([tool]))
        if cost <= left or not kept - ALWAYS_OFFERED:
            kept.add(tool.name)
            left -= cost
    return [t for t in tools if t.name in kept]


def _tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN) + 1
