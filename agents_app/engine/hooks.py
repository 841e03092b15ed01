"""What the engine needs from whoever runs it: persistence, budgets, stop signals.

The engine calls these at every point where the outside world may have changed; the Django
driver (agents_app.worker.execution) implements them with database writes.
"""

from enum import StrEnum
from typing import Any, Protocol

from agents_app.core.errors import ErrorCode
from agents_app.engine.exchanges import Exchange
from agents_app.engine.llm import RetryNotice, Usage
from tools_app.registry import ToolResult


class StreamPhase(StrEnum):
    """Which part of a run the model's streamed output belongs to (`on_token`'s `phase`): the
    streams carry it to the pages and the API socket, which label and render by it."""

    ANALYSIS = "analysis"  # choosing the tools a task needs (a JSON document)
    PLANNING = "planning"  # writing a plan, a team's included (a JSON document)
    EXECUTION = "execution"  # a step's model turns: text or tool calls
    VERIFICATION = "verification"  # judging the result, or a contract (a JSON document)
    # Summarising a chat's older turns: not streamed, but its call is recorded (a model
    # exchange's phase is one of these).
    CONDENSATION = "condensation"


class StopRun(Exception):
    """The run must stop now; `code` says why (CANCELLED, LEASE_LOST, EXECUTION_TIMEOUT)."""

    def __init__(self, code: ErrorCode, message: str = ""):
        super().__init__(message or code)
        self.code = ErrorCode(code)


class EngineHooks(Protocol):
    def checkpoint(self) -> None:
        """Raise StopRun if the run must not make another LLM or tool call."""

    def poll(self) -> None:
        """Like checkpoint, while the model streams: called at every chunk, so it looks at the
        outside world only now and then (a cancel is seen within a fraction of a second)."""

    def on_llm_usage(self, usage: Usage, model: str) -> None:
        """Record an LLM call's tokens; raise DomainError(BUDGET_EXCEEDED) past the budget."""

    def on_llm_exchange(self, exchange: Exchange) -> None:
        """Keep a model call's outcome with the run (told just before its usage); optional:
        hooks without it keep none."""

    def incoming(self, *, turn: int) -> list[tuple[Any, str]]:
        """A chat answer's step boundary before model turn `turn`: the messages a person sent
        to steer it since the last call, as (token, text); each is delivered exactly once."""

    def on_llm_retry(self, notice: RetryNotice) -> None:
        """A model call failed and will be tried again after `notice.delay` seconds."""

    def on_token(
        self, text: str, *, phase: StreamPhase, step_index: int | None, reasoning: bool = False
    ) -> None:
        """A piece of streamed model output (`reasoning`: of its thinking, not its answer)."""

    def before_tool_call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """Persist the call as running and return a handle; raise BUDGET_EXCEEDED past the budget."""

    def approval_needed(self, tool: str, arguments: dict[str, Any]) -> Any:
        """None when the call may run now; otherwise what to ask a person (the engine then
        raises AwaitApproval and the step parks before the call). Asked just before
        before_tool_call of the same call, so the call starts right after its row is written."""

    def after_tool_call(
        self, handle: Any, *, result: ToolResult | None, error_code: str = "", error: str = ""
    ) -> None:
        """Persist the call's outcome."""
