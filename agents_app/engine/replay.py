"""A run played again from its recorded model answers (issue 36, item 4). Plain Python.

`ReplayProvider` is an LLMProvider that sends nothing anywhere: each call the engine makes is
answered by the source run's next recorded answer (engine.exchanges) in the same lane (the
same phase and step: a parallel plan's steps and a tree's children never take each other's
answers), checked against what was asked then. Where the replay parts from its source is a
`Divergence`, told to the caller's `note`:

- a request whose canonical text differs from the recorded one (prompt drift): shown as a
  unified diff, and the recorded answer is still used;
- a recorded answer the engine would no longer take (it calls a tool not offered any more);
- no recorded answer left for a call: the replay cannot go on (StopRun REPLAY_DIVERGED),
  unless its source was stopped there: then it is stopped too (StopRun CANCELLED);
- a tool call whose result differs from the recorded one (found by the worker, which runs the
  tools: worker.replay).

Steps and calls are numbered from 1, as the run page and the diff page number them.
"""

import difflib
import json
import threading
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from agents_app.core.errors import ErrorCode
from agents_app.core.secrecy import redact
from agents_app.engine.hooks import StopRun
from agents_app.engine.llm import (
    LLMError,
    LLMRequest,
    LLMResponse,
    ToolCallRequest,
    Usage,
)

# The most of a drifted request's diff a divergence keeps (a request holds the whole
# conversation so far; the diff of one edited prompt is a few lines).
DIFF_MAX_CHARS = 20_000


class DivergenceKind(StrEnum):
    REQUEST_DRIFT = "request_drift"
    ANSWER_INVALID = "answer_invalid"
    ANSWERS_RAN_OUT = "answers_ran_out"
    RESULT_DIFFERS = "result_differs"
    CALL_NOT_RECORDED = "call_not_recorded"
    APPROVAL_NOT_RECORDED = "approval_not_recorded"
    APPROVAL_NOT_APPLIED = "approval_not_applied"


@dataclass(frozen=True)
class Divergence:
    """Where a replay parted from its source: `step` and `call` numbered from 1 (None: not
    within a step, or not at a tool call); `message` in a person's words; `diff`: a drifted
    request's unified diff (recorded, then replayed)."""

    kind: DivergenceKind
    message: str
    step: int | None = None
    call: int | None = None
    diff: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "kind": str(self.kind), "anchor": self.anchor}

    @property
    def anchor(self) -> str:
        """The diff page's name for where it happened (engine.run_diff's anchors)."""
        if self.step is None:
            return ""
        return f"step-{self.step}" + (f"-call-{self.call}" if self.call is not None else "")


@dataclass(frozen=True)
class RecordedAnswer:
    """One recorded model call (models.ModelExchange) as the replay answers from it."""

    phase: str
    lane: int | None  # the step's index; None: the run's own calls
    request_sha256: str
    request: str = ""  # the canonical request text ("" when it was not kept)
    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    reasoning: str = ""
    finish_reason: str = ""
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    error_code: str = ""
    error: str = ""


def request_diff(recorded: str, replayed: str) -> str:
    """A unified diff of two canonical request texts, one JSON value a line."""

    def lines(text: str) -> list[str]:
        try:
            return json.dumps(json.loads(text), indent=1, sort_keys=True).splitlines()
        except ValueError:
            return text.splitlines()

    if not recorded:
        return "(the recorded request's text was not kept: only its hash differs)"
    diff = "\n".join(
        difflib.unified_diff(
            lines(recorded), lines(replayed), "recorded", "replayed", n=2, lineterm=""
        )
    )
    return diff if len(diff) <= DIFF_MAX_CHARS else diff[:DIFF_MAX_CHARS] + "\n…[cut]"


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _arguments_sent(requests: list[str]) -> dict[str, Any]:
    """Each tool call's arguments as the recorded requests show them (keys in the order the
    model sent them), by their canonical JSON."""
    sent: dict[str, Any] = {}
    for text in requests:
        try:
            messages = json.loads(text).get("messages", []) if text else []
        except (ValueError, AttributeError):
            continue
        for message in messages:
            for call in message.get("tool_calls") or ():
                try:
                    value = json.loads(call["function"]["arguments"])
                except (KeyError, TypeError, ValueError):
                    continue
                sent.setdefault(canonical_json(value), value)
    return sent


def step_of(lane: Any) -> int | None:
    return lane + 1 if isinstance(lane, int) else None


def _not_offered_any_more(answer: RecordedAnswer, request: LLMRequest) -> list[str]:
    """The tools `answer` calls that `request` does not offer but the recorded request did (a
    model calling a tool it was never offered did so in its source too: no divergence)."""
    offered = {tool.name for tool in request.tools}
    missing = {call["name"] for call in answer.tool_calls} - offered
    if not missing or not answer.request:
        return []
    try:
        then = {tool["name"] for tool in json.loads(answer.request).get("tools", [])}
    except (ValueError, AttributeError, KeyError, TypeError):
        return []
    return sorted(missing & then)


class ReplayProvider:
    """An LLMProvider answering from a run's recorded answers (see the module). Safe to share
    between the threads of a parallel plan: each lane is taken in its own order."""

    model = "replay"

    def __init__(
        self,
        recorded: list[RecordedAnswer],
        note: Callable[[Divergence], None],
        *,
        stopped: bool = False,
        answered: Counter[tuple[str, Any]] | None = None,
    ) -> None:
        self._lanes: dict[tuple[str, Any], deque[RecordedAnswer]] = {}
        for answer in recorded:
            self._lanes.setdefault((answer.phase, answer.lane), deque()).append(answer)
        # What earlier deliveries of the replay took already (before it parked, say): each
        # lane goes on after them.
        for lane, count in (answered or Counter()).items():
            queue = self._lanes.get(lane, deque())
            for _ in range(min(count, len(queue))):
                queue.popleft()
        self._note = note
        # The source was stopped (cancelled): where its answers end, it was asked to stop, and
        # so is its replay, at the same point (the call after its last answer).
        self._stopped = stopped
        self._lock = threading.Lock()
        self._recorded = recorded
        self._sent: dict[str, Any] | None = None
        self.requests = 0  # the calls answered: none of them went to a model

    def _as_sent(self, arguments: Any) -> Any:
        """A recorded call's arguments with their keys in the order the model sent them: a
        database may keep them reordered (PostgreSQL's jsonb), and the next request shows them
        in their keys' order. The recorded requests hold each as it was sent."""
        if not isinstance(arguments, dict):
            return arguments
        with self._lock:
            if self._sent is None:
                self._sent = _arguments_sent([answer.request for answer in self._recorded])
            return self._sent.get(canonical_json(arguments), arguments)

    def complete(self, request: LLMRequest) -> LLMResponse:
        asked = request.asked
        if asked is None:  # engine.calls sets it on every request
            raise StopRun(ErrorCode.REPLAY_DIVERGED, "a model call made outside engine.calls")
        step = step_of(asked.lane)
        with self._lock:
            self.requests += 1
            queue = self._lanes.get((asked.phase, asked.lane))
            answer = queue.popleft() if queue else None
        where = f"step {step}: " if step is not None else ""
        if answer is None and self._stopped:
            raise StopRun(ErrorCode.CANCELLED)
        if answer is None:
            divergence = Divergence(
                DivergenceKind.ANSWERS_RAN_OUT,
                f"{where}the source made no such {asked.phase} call (no recorded answer left)",
                step,
            )
            self._note(divergence)
            raise StopRun(ErrorCode.REPLAY_DIVERGED, divergence.message)
        if answer.request_sha256 != asked.sha256:
            self._note(
                Divergence(
                    DivergenceKind.REQUEST_DRIFT,
                    f"{where}the {asked.phase} request differs from the recorded one",
                    step,
                    # The recorded text was redacted when it was written: so is what it is
                    # compared with (a secret in the request is neither shown nor a change).
                    diff=request_diff(answer.request, redact(asked.text)),
                )
            )
        unknown = _not_offered_any_more(answer, request)
        if unknown:
            self._note(
                Divergence(
                    DivergenceKind.ANSWER_INVALID,
                    f"{where}the recorded answer calls {', '.join(unknown)}, "
                    "which is not offered any more",
                    step,
                )
            )
        if answer.error_code:
            raise LLMError(ErrorCode(answer.error_code), answer.error)
        if answer.reasoning and request.on_reasoning is not None:
            request.on_reasoning(answer.reasoning)
        if answer.content and request.on_token is not None:
            request.on_token(answer.content)
        return LLMResponse(
            content=answer.content,
            tool_calls=[
                ToolCallRequest(
                    id=call["id"],
                    name=call["name"],
                    arguments=self._as_sent(call["arguments"]),
                    arguments_error=call.get("arguments_error"),
                )
                for call in answer.tool_calls
            ],
            reasoning=answer.reasoning,
            usage=answer.usage,
            model=answer.model,
            finish_reason=answer.finish_reason,
        )
