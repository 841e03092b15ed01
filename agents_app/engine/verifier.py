"""Verification: the model judges whether the executed steps completed the task."""

from typing import Any

from agents_app.core.errors import ErrorCode
from agents_app.engine.hooks import EngineHooks
from agents_app.engine.llm import LLMProvider
from agents_app.engine.prompts import verify_messages
from agents_app.engine.schemas import VerificationOutput
from agents_app.engine.structured import ask_structured


def verify(
    *,
    provider: LLMProvider,
    hooks: EngineHooks,
    task: str,
    context: dict[str, Any],
    steps: list[tuple[int, str, str, str]],
    can_replan: bool,
    timeout: float,
) -> VerificationOutput:
    """`steps` are (index, objective, status, output-or-error). Raises DomainError
    VERIFICATION_FAILED / VERIFICATION_TIMEOUT, or LLMError."""
    return ask_structured(
        provider=provider,
        hooks=hooks,
        messages=verify_messages(task=task, context=context, steps=steps, can_replan=can_replan),
        model=VerificationOutput,
        phase="verification",
        timeout=timeout,
        fail_code=ErrorCode.VERIFICATION_FAILED,
        timeout_code=ErrorCode.VERIFICATION_TIMEOUT,
    )
