"""Ask the model for a JSON answer that must validate; retry once with the error shown to it."""

import copy
import functools
import time
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.engine.calls import ask_model
from agents_app.engine.hooks import EngineHooks, StreamPhase
from agents_app.engine.jsonparse import extract_json_object, without_prose
from agents_app.engine.llm import LLMError, LLMProvider, LLMRequest
from agents_app.engine.prompts import cut_off_message, invalid_output_message

Model = TypeVar("Model", bound=BaseModel)

# Seed 000's recovery table: a malformed planning answer is retried once.
ATTEMPTS = 2
# How much of an invalid answer is shown back to the model with the error.
ECHO_CHARS = 2_000
# How much of the reason the run's error message carries (its details keep more).
SAID_CHARS = 300


@functools.cache
def _schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """`model`'s JSON schema, a copy of its own to change: pydantic builds it anew on every
    call (about a millisecond), and a run asks for some on every plan and verdict."""
    return copy.deepcopy(_schema(model))


def ask_structured(
    *,
    provider: LLMProvider,
    hooks: EngineHooks,
    messages: list[dict[str, Any]],
    model: type[Model],
    phase: StreamPhase,
    timeout: float,
    fail_code: ErrorCode,
    timeout_code: ErrorCode,
    check: Callable[[Model], None] | None = None,
    max_tokens: int | None = None,
    schema: dict[str, Any] | None = None,
) -> Model:
    """Return the model's answer as `model`. `schema` (default: the model's own; a narrower
    one built for this call) is what the server is asked to keep to, without its
    descriptions. Raises DomainError(fail_code) after two invalid answers, ANSWER_TOO_LONG
    when both were cut off at `max_tokens`, DomainError(timeout_code) when `timeout` seconds
    pass, LLMError for the wire."""
    deadline = time.monotonic() + timeout
    first_messages = list(messages)
    messages = first_messages
    wanted = without_prose(schema if schema is not None else schema_of(model))
    error, said, cut_offs = "", "", 0
    for _ in range(ATTEMPTS):
        hooks.checkpoint()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise DomainError(timeout_code, f"{phase} took longer than {timeout:g} s")
        request = LLMRequest(
            messages=messages,
            response_schema=wanted,
            response_schema_name=model.__name__,
            timeout=remaining,
            max_tokens=max_tokens,
            interrupt=hooks.poll,
            on_token=lambda text: hooks.on_token(text, phase=phase, step_index=None),
            on_reasoning=lambda text: hooks.on_token(
                text, phase=phase, step_index=None, reasoning=True
            ),
        )
        try:
            response = ask_model(provider, hooks, request, phase=phase)
        except LLMError as exc:
            if exc.code == ErrorCode.REQUEST_TIMEOUT and time.monotonic() >= deadline - 0.05:
                raise DomainError(timeout_code, f"{phase} took longer than {timeout:g} s") from exc
            raise
        if response.cut_off:
            # A runaway answer: ask again from the start, told to be brief; never wait it out.
            cut_offs += 1
            error = f"the answer was cut off at the {max_tokens}-token limit"
            messages = [*first_messages, cut_off_message(max_tokens)]
            continue
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
            said = _readable(exc) if isinstance(exc, ValidationError) else error
            messages = [
                *messages,
                {"role": "assistant", "content": (response.content or "(empty)")[:ECHO_CHARS]},
                invalid_output_message(error),
            ]
    if cut_offs == ATTEMPTS:
        raise DomainError(
            ErrorCode.ANSWER_TOO_LONG,
            f"The model's {phase} answer was cut off at its {max_tokens}-token limit twice",
            {"phase": phase, "max_tokens": max_tokens},
        )
    raise DomainError(
        fail_code,
        f"The model's {phase} answer was invalid twice: {said[:SAID_CHARS]}",
        {"validation_error": error[:2000]},
    )


def _readable(exc: ValidationError) -> str:
    """The first few problems as "where: what" ("steps.0.objective: Field required")."""
    problems = [
        f"{'.'.join(str(part) for part in e['loc']) or 'answer'}: {e['msg']}"
        for e in exc.errors()[:3]
    ]
    more = len(exc.errors()) - len(problems)
    return "; ".join(problems) + (f" (and {more} more)" if more > 0 else "")
