"""Verification: the model judges whether the executed steps completed the task, citing the
tool calls that show it."""

from typing import Any

from agents_app.core.errors import ErrorCode
from agents_app.engine.evidence import CallRecord, citable_numbers
from agents_app.engine.hooks import EngineHooks, StreamPhase
from agents_app.engine.llm import LLMProvider
from agents_app.engine.plan_edits import PlanEdit
from agents_app.engine.prompts import verify_messages
from agents_app.engine.schemas import VerificationOutput
from agents_app.engine.structured import ask_structured, schema_of


def verification_schema(citable: list[int]) -> dict[str, Any]:
    """VerificationOutput's JSON schema with `evidence` limited to the calls it may cite, so a
    server that applies the schema cannot produce another number."""
    schema = schema_of(VerificationOutput)
    evidence = dict(schema["properties"]["evidence"])
    if citable:
        evidence["items"] = {"type": "integer", "enum": list(citable)}
        evidence["maxItems"] = len(citable)
    else:
        evidence["maxItems"] = 0
    schema["properties"] = {**schema["properties"], "evidence": evidence}
    return schema


def check_evidence(verdict: VerificationOutput, citable: list[int]) -> None:
    """Raise ValueError (an invalid answer, asked again) when a verdict of "complete" for a
    run that made successful tool calls cites none of them, or cites others."""
    if not verdict.task_complete or not citable:
        return
    if not verdict.evidence:
        raise ValueError(
            "task_complete is true but evidence cites no tool call; cite the numbers of the "
            f"successful calls that show the task is done (one of {citable})"
        )
    unknown = sorted(set(verdict.evidence) - set(citable))
    if unknown:
        raise ValueError(
            f"evidence cites {unknown}, which are not successful tool calls; cite only {citable}"
        )


def verify(
    *,
    provider: LLMProvider,
    hooks: EngineHooks,
    task: str,
    context: dict[str, Any],
    steps: list[tuple[int, str, str, str]],
    can_replan: bool,
    timeout: float,
    max_tokens: int | None = None,
    calls: list[CallRecord] = (),
    edit: PlanEdit | None = None,
) -> VerificationOutput:
    """`steps` are (index, objective, status, output-or-error); `calls` the run's tool calls;
    `edit` the plan a person edited, the task as they reshaped it.
    Raises DomainError VERIFICATION_FAILED / VERIFICATION_TIMEOUT, or LLMError."""
    citable = citable_numbers(list(calls))
    return ask_structured(
        provider=provider,
        hooks=hooks,
        messages=verify_messages(
            task=task,
            context=context,
            steps=steps,
            can_replan=can_replan,
            calls=list(calls),
            edit=edit,
        ),
        model=VerificationOutput,
        phase=StreamPhase.VERIFICATION,
        timeout=timeout,
        fail_code=ErrorCode.VERIFICATION_FAILED,
        max_tokens=max_tokens,
        timeout_code=ErrorCode.VERIFICATION_TIMEOUT,
        check=lambda verdict: check_evidence(verdict, citable),
        schema=verification_schema(citable),
    )
