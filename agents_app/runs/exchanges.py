"""A run's model calls as they were recorded (models.ModelExchange, issue 36), one by one: what
a replay answers from (worker.replay) and what a look at a run's calls reads."""

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agents_app.engine.exchanges import unframed, unpack_calls
from agents_app.models import ModelExchange, Step


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
    """Run `run_id`'s model calls in the order they were numbered: its steps' (Step.model_calls)
    and those of no step (ModelExchange)."""
    frames: list[tuple[int | None, bytes]] = [
        (None, calls)
        for calls in ModelExchange.objects.filter(run_id=run_id).values_list("calls", flat=True)
    ]
    for step_id, appended in (
        Step.objects.filter(run_id=run_id)
        .exclude(model_calls=b"")
        .values_list("pk", "model_calls")
        .order_by("index")
    ):
        frames += [(step_id, frame) for frame in unframed(appended)]
    found = [
        ModelCall(
            seq=call["seq"],
            phase=call["phase"],
            step_id=step_id,
            attempt=call["attempt"],
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
        for step_id, frame in frames
        for call in unpack_calls(frame)
    ]
    return sorted(found, key=lambda call: call.seq)
