"""Every model call the engine makes goes through `ask_model`: its cost is counted against the
run's budget whether the call answered, was cut off or failed; what the model said comes back
as text that can be stored."""

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from agents_app.core.inputs import storable, storable_text
from agents_app.engine.exchanges import (
    Exchange,
    exchange_of,
    failed_exchange,
    request_text,
    text_sha256,
)
from agents_app.engine.hooks import EngineHooks, StreamPhase
from agents_app.engine.llm import Asked, LLMError, LLMProvider, LLMRequest, LLMResponse
from agents_app.engine.untrusted import tool_results_as_data


def ask_model(
    provider: LLMProvider, hooks: EngineHooks, request: LLMRequest, *, phase: StreamPhase
) -> LLMResponse:
    """provider.complete(request), its usage recorded through hooks.on_llm_usage (which may
    raise BUDGET_EXCEEDED). A failed call's LLMError is raised after its usage is recorded.
    Each retry of the call is told to hooks.on_llm_retry, when the hooks have it. Its outcome
    (the answer as returned here, or the error) is told to hooks.on_llm_exchange first, with
    `phase` and the request's canonical text and hash (engine.exchanges), when the hooks have
    it. The request sent carries them too (LLMRequest.asked), for a replay's provider.

    A model may send what no database column takes (JSON's "\\udcff" decodes to a lone
    surrogate; NUL): its text, reasoning, parsed JSON and streamed pieces come back with U+FFFD
    in their place, and its calls' names and ids too. A call's arguments are left as they
    came: the tool registry refuses them as that call's error, which the model is shown.

    Every tool message goes out as a data block (engine.untrusted): whatever answered a call,
    in any kind of run, reaches the model labelled as data. The request's own messages (which
    a step keeps, and a chat's transcript stores) stay as they were."""
    if request.on_retry is None:
        request.on_retry = getattr(hooks, "on_llm_retry", None)
    text = request_text(request)
    sent = replace(
        request,
        messages=tool_results_as_data(request.messages),
        on_token=_storable_pieces(request.on_token),
        on_reasoning=_storable_pieces(request.on_reasoning),
        # The hooks' lane: the step the call belongs to (None: the run's own calls).
        asked=Asked(phase, getattr(hooks, "lane", None), text_sha256(text), text),
    )
    record = getattr(hooks, "on_llm_exchange", _not_recorded)
    try:
        response = provider.complete(sent)
    except LLMError as exc:
        model = exc.details.get("model", "") if isinstance(exc.details, dict) else ""
        record(failed_exchange(request, exc, str(model), phase=phase, text=text))
        if exc.usage.total:
            hooks.on_llm_usage(exc.usage, str(model))
        raise
    answer = replace(
        response,
        content=storable_text(response.content),
        reasoning=storable_text(response.reasoning),
        parsed=storable(response.parsed),
        tool_calls=[
            replace(call, id=storable_text(call.id), name=storable_text(call.name))
            for call in response.tool_calls
        ],
    )
    # Before its usage, whose commit (a child's, at once) writes it too.
    record(exchange_of(request, answer, phase=phase, text=text))
    hooks.on_llm_usage(answer.usage, answer.model)
    return answer


def _not_recorded(exchange: Exchange) -> None:
    """Hooks without on_llm_exchange (a test's) keep no exchanges."""


def _storable_pieces(
    receive: Callable[[str], Any] | None,
) -> Callable[[str], Any] | None:
    if receive is None:
        return None
    return lambda piece: receive(storable_text(piece))
