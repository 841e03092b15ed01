"""Ask the model for a JSON answer that must validate; retry once with the error shown to it."""

import time
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.engine.hooks import EngineHooks
from agents_app.engine.jsonparse import extract_json_object
from agents_app.engine.llm import LLMError, LLMProvider, LLMRequest
from agents_app.engine.prompts import invalid_output_message

Model = TypeVar("Model", bound=BaseModel)

# Seed 000's recovery table: a malformed planning answer is retried once.
ATTEMPTS = 2


def ask_structured(
    *,
    provider: LLMProvider,
    hooks: EngineHooks,
    messages: list[dict[str, Any]],
    model: type[Model],
    phase: str,
    timeout: float,
    fail_code: ErrorCode,
    timeout_code: ErrorCode,
    check: Callable[[Model], None] | None = None,
) -> Model:
    """Return the model's answer as `model`. Raises DomainError(fail_code) after two invalid
    answers, DomainError(timeout_code) when `timeout` seconds pass, LLMError for the wire."""
    deadline = time.monotonic() + timeout
    messages = list(messages)
    error = ""
    for _ in range(ATTEMPTS):
        hooks.checkpoint()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise DomainError(timeout_code, f"{phase} took longer than {timeout:g} s")
        request = LLMRequest(
            messages=messages,
            response_schema=model.model_json_schema(),
            response_schema_name=model.__name__,
            timeout=remaining,
            on_token=lambda text: hooks.on_token(text, phase=phase, step_index=None),
            on_reasoning=lambda text: hooks.on_token(
                text, phase=phase, step_index=None, reasoning=True
            ),
        )
        try:
            response = provider.complete(request)
        except LLMError as exc:
            if exc.code == ErrorCode.REQUEST_TIMEOUT and time.monotonic() >= deadline - 0.05:
                raise DomainError(timeout_code, f"{phase} took longer than {timeout:g} s") from exc
            raise
        hooks.on_llm_usage(response.usage, response.model)
        data = (
            response.parsed
            if response.parsed is not None
            else extract_json_object(response.content)
        )
        try:
            if data is None:
                raise ValueError("the answer contained no JSON object")
            answer = model.model_validate(data)
            if check is not None:
                check(answer)
            return answer
        except (ValidationError, ValueError) as exc:
            error = str(exc)
            messages += [
                {"role": "assistant", "content": response.content or "(empty)"},
                invalid_output_message(error),
            ]
    raise DomainError(
        fail_code,
        f"The model's {phase} answer was invalid twice",
        {"validation_error": error[:2000]},
    )
