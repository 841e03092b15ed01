"""The provider interface the engine talks to. Plain Python: no Django, no Celery."""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from agents_app.core.errors import DomainError


@dataclass(frozen=True)
class ToolSchema:
    """A tool as offered to the model: wire name, description, JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolCallRequest:
    """A tool call the model asked for."""

    id: str
    name: str
    arguments: dict[str, Any]
    # Set when the model's arguments were not a JSON object; the engine reports it as invalid.
    arguments_error: str | None = None


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class RetryNotice:
    """A failed model call about to be tried again: what failed, and when the next try is."""

    code: str  # the ErrorCode the call fails with if the retries run out
    reason: str
    delay: float  # seconds until the next attempt
    attempt: int  # the number of the next attempt (2 for the first retry)
    attempts: int  # the most attempts there will be


@dataclass(frozen=True)
class Asked:
    """What the engine asked, as a model call is recorded (engine.exchanges): its phase, its
    lane (the step it belongs to: engine.replay answers each lane in its own order), its
    canonical text and that text's hash. engine.calls sets it on every request it sends; a
    provider that talks to a model ignores it."""

    phase: str
    lane: Any
    sha256: str
    text: str


@dataclass
class LLMRequest:
    messages: list[dict[str, Any]]
    # Offered tools; the model may answer with tool_calls instead of content.
    tools: list[ToolSchema] = field(default_factory=list)
    # Ask for a JSON object matching this schema (json_schema → json_object → prompt fallback).
    response_schema: dict[str, Any] | None = None
    response_schema_name: str = "response"
    # Seconds this whole call (retries included) may take.
    timeout: float = 120.0
    # Called with each piece of streamed content as it arrives.
    on_token: Callable[[str], None] | None = None
    # Called with each piece of streamed reasoning (reasoning_content) as it arrives.
    on_reasoning: Callable[[str], None] | None = None
    # The most tokens the answer may have; a longer one is cut off (finish_reason "length").
    max_tokens: int | None = None
    # The model must call one of `tools` (the first turn of a step that needs a tool).
    tool_required: bool = False
    # Called at every streamed chunk; whatever it raises (a cancel) ends the call at once and
    # passes through unchanged. It should be cheap: it runs many times a second.
    interrupt: Callable[[], None] | None = None
    # Called before each wait between a failed attempt and the next one.
    on_retry: Callable[[RetryNotice], None] | None = None
    # Set by engine.calls on the request it sends (Asked).
    asked: Asked | None = None


@dataclass
class LLMResponse:
    content: str
    tool_calls: list[ToolCallRequest] = field(default_factory=list)
    reasoning: str = ""
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    # The parsed JSON object when response_schema was given (not yet validated by the caller).
    parsed: dict[str, Any] | None = None
    # Why the model stopped: "stop", "tool_calls", or "length" when max_tokens cut it off.
    finish_reason: str = ""
    # Which configured connection answered, when the provider knows (the worker's do): the
    # engine only passes it on to the exchange it records.
    connection_id: int | None = None

    @property
    def cut_off(self) -> bool:
        return self.finish_reason == "length"


class LLMError(DomainError):
    """An LLM call that failed after the provider's own retries. Codes: LLM_NOT_CONFIGURED,
    RATE_LIMITED, CONNECTION_REFUSED, REQUEST_TIMEOUT, INVALID_RESPONSE, MAX_RETRIES_EXCEEDED.
    `usage` is what the failed attempts cost (a stream cut off by the deadline still spent its
    tokens); the engine counts it against the run's budget like any answer's.

    `message` is AgentDesk's own words, for the run and its owner; what the server itself said
    (its error body, which a gateway may fill with what it was sent, key included) is
    `server_text`, for staff only: the worker records it on the LLM connection's health."""

    usage: Usage = Usage()
    server_text: str = ""


class LLMProvider(Protocol):
    def complete(self, request: LLMRequest) -> LLMResponse:
        """Return the model's answer or raise LLMError. Retries transient failures itself."""
        ...
