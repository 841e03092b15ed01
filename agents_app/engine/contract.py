"""Contract agents (seed 002): after each tool cycle the model judges whether its contract is
met, citing the tool results it relies on; an agent repeating itself is stuck."""

import json
from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agents_app.core.errors import ErrorCode
from agents_app.engine.evidence import CallRecord, citable_numbers
from agents_app.engine.hooks import EngineHooks, StreamPhase
from agents_app.engine.llm import LLMProvider
from agents_app.engine.structured import ask_structured, schema_of
from agents_app.engine.untrusted import DATA_RULE, as_data
from agents_app.engine.verifier import verification_schema

# Stuck: the same call with the same result this many times, or the same error this many times.
SAME_CALL_LIMIT = 4
SAME_ERROR_LIMIT = 3


class ContractVerdict(BaseModel):
    model_config = ConfigDict(extra="ignore")

    met: bool
    reason: str = ""
    evidence: list[int] = Field(
        default_factory=list, description="Numbers of the tool calls whose results show it."
    )


def contract_system(contract: str) -> dict[str, Any]:
    return {
        "role": "system",
        "content": "AGENTDESK:CONTRACT\nYou are an autonomous agent working on a contract. Work "
        "toward it with the tools, one step at a time; file paths are relative to your "
        f"workspace. Say briefly what you do and what you found. {DATA_RULE}\n\nContract:\n"
        + contract,
    }


def continue_message(reason: str) -> dict[str, Any]:
    """What a cycle after the first hears: why the work is not done yet."""
    return {
        "role": "user",
        "content": f"The contract is not met yet: {reason or 'work remains'}. Continue.",
    }


def evaluation_messages(
    messages: list[dict[str, Any]], calls: list[CallRecord]
) -> list[dict[str, Any]]:
    """The agent's transcript so far, then the question: is the contract met?"""
    lines = [
        f"[#{c.number}] {c.tool} {json.dumps(c.arguments, ensure_ascii=False)[:200]} → "
        f"{'ok' if c.ok else 'failed'}: {c.result[:300]}"
        for c in calls
    ]
    question = (
        "AGENTDESK:EVALUATE\nJudge your work against the contract. Is the contract fully met "
        "now? Answer with JSON: met (true only when every part of the contract is done), "
        "reason (one or two sentences: what is done, or what is still missing), evidence (the "
        "numbers of the tool calls whose results show it).\nTool calls so far:\n"
        # Their results are what the tools returned: data.
        + (as_data("\n".join(lines), "tool calls") if lines else "(none)")
    )
    return [*messages, {"role": "user", "content": question}]


def check_verdict(verdict: ContractVerdict, citable: list[int]) -> None:
    """A verdict of "met" after successful calls must cite some of them, and only them."""
    if not verdict.met or not citable:
        return
    if not verdict.evidence:
        raise ValueError(
            f"met is true but evidence cites no tool call; cite the calls that show it ({citable})"
        )
    unknown = sorted(set(verdict.evidence) - set(citable))
    if unknown:
        raise ValueError(f"evidence cites {unknown}, which are not successful calls: {citable}")


def evaluate_contract(
    *,
    provider: LLMProvider,
    hooks: EngineHooks,
    messages: list[dict[str, Any]],
    calls: list[CallRecord],
    timeout: float,
    max_tokens: int | None = None,
) -> ContractVerdict:
    citable = citable_numbers(calls)
    schema = verification_schema(citable)
    verdict_schema = schema_of(ContractVerdict)
    schema = {
        **verdict_schema,
        "properties": {
            **verdict_schema["properties"],
            "evidence": schema["properties"]["evidence"],
        },
    }
    return ask_structured(
        provider=provider,
        hooks=hooks,
        messages=evaluation_messages(messages, calls),
        model=ContractVerdict,
        phase=StreamPhase.VERIFICATION,
        timeout=timeout,
        fail_code=ErrorCode.VERIFICATION_FAILED,
        timeout_code=ErrorCode.VERIFICATION_TIMEOUT,
        check=lambda verdict: check_verdict(verdict, citable),
        max_tokens=max_tokens,
        schema=schema,
    )


def stuck(calls: list[CallRecord]) -> str | None:
    """Why the agent is stuck, or None: the same call with the same result SAME_CALL_LIMIT
    times, or the same error SAME_ERROR_LIMIT times."""
    same_call = Counter(
        (c.tool, json.dumps(c.arguments, sort_keys=True, default=str), c.result)
        for c in calls
        if c.ok
    )
    for (tool, arguments, _), count in same_call.items():
        if count >= SAME_CALL_LIMIT:
            return f"the same call with the same result {count} times: {tool} {arguments[:80]}"
    same_error = Counter((c.tool, c.result) for c in calls if not c.ok)
    for (tool, error), count in same_error.items():
        if count >= SAME_ERROR_LIMIT:
            return f"the same error {count} times: {tool}: {error[:120]}"
    return None
