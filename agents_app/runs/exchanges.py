"""A run's model calls as they were recorded (models.ModelExchange, issue 36), one by one: what
a replay answers from (worker.replay) and what a look at a run's calls reads."""

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agents_app.engine.exchanges import unpack_calls
from agents_app.models import ModelExchange


@dataclass(frozen=True)
class ModelCall:
    """One model call: its number in the run, where it belongs, what it was asked (its
    request's canonical text, redacted, and that text's hash before redaction) and what came
    back (the model's words redacted, or the error the call failed with)."""

    seq: int
    phase: str
    step_id: int | None
    attempt: int
    request_sha256: str
    request: str
    content: str
    tool_calls: list[dict[str, Any]]
    reasoning: str
    finish_reason: str
    error_code: str
    error: str
    prompt_tokens: int
    completion_tokens: int
    llm_model: str
    connection_id: int | None
    created_at: datetime


def model_calls(run_id: int) -> list[ModelCall]:
    """Run `run_id`'s model calls in the order they were numbered."""
    found = []
    for row in ModelExchange.objects.filter(run_id=run_id).order_by("seq"):
        for i, call in enumerate(unpack_calls(row.calls)):
            found.append(
                ModelCall(
                    seq=row.seq + i,
                    phase=row.phase,
                    step_id=row.step_id,
                    attempt=row.attempt,
                    request_sha256=call["sha"],
                    request=call["request"],
                    content=call["content"],
                    tool_calls=call["tool_calls"],
                    reasoning=call["reasoning"],
                    finish_reason=call["finish_reason"],
                    error_code=call["error_code"],
                    error=call["error"],
                    prompt_tokens=call["prompt_tokens"],
                    completion_tokens=call["completion_tokens"],
                    llm_model=call["model"],
                    connection_id=call["connection"],
                    created_at=datetime.fromtimestamp(call["at"], UTC),
                )
            )
    return found
