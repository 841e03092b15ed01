"""Accumulating an OpenAI chat-completions stream: content, reasoning (including a leading
<think> block some models write into the content), tool calls and usage."""

import json
import logging
import uuid
from collections.abc import Callable
from typing import Any

from agents_app.engine.llm import LLMError, ToolCallRequest, Usage

logger = logging.getLogger(__name__)


class _StreamCollector:
    """Accumulates streamed chunks: content (minus a leading think block), reasoning, tool calls."""

    def __init__(
        self,
        on_token: Callable[[str], None] | None,
        *,
        live: bool = True,
        on_reasoning: Callable[[str], None] | None = None,
    ) -> None:
        self._on_token = on_token
        self._on_reasoning = on_reasoning
        self._live = live  # pass content on as it streams
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._think = _ThinkSplitter()
        self._calls: list[dict[str, Any]] = []
        self._slots: dict[int, int] = {}
        self.usage: Usage | None = None
        self.model = ""
        self.finished = False
        self.finish_reason = ""
        self.started = False  # a chunk arrived: the server spent tokens on this call

    def add(self, chunk: Any) -> None:
        self.started = True
        self.model = getattr(chunk, "model", None) or self.model
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = Usage(
                prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            )
        for choice in getattr(chunk, "choices", None) or []:
            if getattr(choice, "index", 0) not in (0, None):
                continue
            if choice.finish_reason:
                self.finished = True
                self.finish_reason = str(choice.finish_reason)
            delta = choice.delta
            if delta is None:
                continue
            # Servers name it either way; some send both with the same text.
            for name in ("reasoning_content", "reasoning"):
                piece = getattr(delta, name, None)
                if isinstance(piece, str) and piece:
                    self._reasoning.append(piece)
                    self._emit_reasoning(piece)
                    break
            if delta.content:
                self._content.append(delta.content)
                visible = self._think.feed(delta.content)
                if self._live:
                    self.emit(visible)
            for call in delta.tool_calls or []:
                self._add_tool_call(call)

    def _add_tool_call(self, call: Any) -> None:
        index = call.index if call.index is not None else len(self._slots)
        slot = self._slots.get(index)
        entry = self._calls[slot] if slot is not None else None
        # Some servers reuse index 0 for every call; a new id means a new call.
        if entry is None or (call.id and entry["id"] and call.id != entry["id"] and entry["name"]):
            entry = {"id": "", "name": "", "arguments": []}
            self._slots[index] = len(self._calls)
            self._calls.append(entry)
        if call.id:
            entry["id"] = call.id
        function = call.function
        if function is not None:
            if function.name and function.name != entry["name"]:
                entry["name"] += function.name
            if function.arguments:
                entry["arguments"].append(function.arguments)

    def produced_chars(self) -> int:
        """How much the model wrote so far: content, reasoning and tool call arguments."""
        return (
            sum(map(len, self._content))
            + sum(map(len, self._reasoning))
            + sum(len(c["name"]) + sum(map(len, c["arguments"])) for c in self._calls)
        )

    def emit(self, text: str) -> None:
        if not text or self._on_token is None:
            return
        try:
            self._on_token(text)
        except LLMError:
            raise  # the caller's way to abort a call
        except Exception:
            logger.exception("on_token failed; not streaming the rest of this answer")
            self._on_token = None

    def _emit_reasoning(self, text: str) -> None:
        if self._on_reasoning is None:
            return
        try:
            self._on_reasoning(text)
        except LLMError:
            raise
        except Exception:
            logger.exception("on_reasoning failed; not streaming the rest of this reasoning")
            self._on_reasoning = None

    def finish(self) -> tuple[str, str]:
        """The content and the reasoning, think blocks moved from the first to the second."""
        rest = self._think.flush()
        if self._live:
            self.emit(rest)
        content, thought = "".join(self._content), self._think.reasoning
        if thought is None:
            content, thought = _split_think(content)
        else:
            content = self._think.visible
        reasoning = "\n".join(p for p in ("".join(self._reasoning).strip(), thought.strip()) if p)
        return content, reasoning

    def tool_calls(self) -> list[ToolCallRequest]:
        calls = []
        for entry in self._calls:
            if not entry["name"]:
                continue
            arguments, error = _parse_arguments("".join(entry["arguments"]))
            call_id = entry["id"] or f"call_{uuid.uuid4().hex[:12]}"
            calls.append(ToolCallRequest(call_id, entry["name"], arguments, error))
        return calls


_OPEN_TAGS = ("<think>", "<thinking>")


class _ThinkSplitter:
    """Holds back a <think>…</think> (or <thinking>) block at the start of streamed content."""

    def __init__(self) -> None:
        self._state = "start"  # start → think → content, or start → content
        self._buffer = ""
        self._close = ""
        self.reasoning: str | None = None  # set once a think block was seen
        self.visible = ""

    def feed(self, piece: str) -> str:
        if self._state == "content":
            return self._show(piece)
        self._buffer += piece
        if self._state == "start":
            head = self._buffer.lstrip()
            tag = next((t for t in _OPEN_TAGS if head.startswith(t)), None)
            if tag is None:
                if any(t.startswith(head) for t in _OPEN_TAGS):
                    return ""  # "<thi" may still become a tag
                self._state, text, self._buffer = "content", self._buffer, ""
                return self._show(text)
            self._state, self._close, self._buffer = "think", "</" + tag[1:], head[len(tag) :]
        end = self._buffer.find(self._close)
        if end == -1:
            return ""
        self.reasoning = self._buffer[:end]
        rest, self._buffer, self._state = self._buffer[end + len(self._close) :], "", "content"
        return self._show(rest.lstrip())

    def flush(self) -> str:
        if self._state == "think":  # never closed: all of it was thinking
            self.reasoning, self._buffer = self._buffer, ""
            return ""
        text, self._buffer = self._buffer, ""
        return self._show(text)

    def _show(self, text: str) -> str:
        if self.reasoning is not None and not self.visible:
            text = text.lstrip()
        self.visible += text
        return text


def _split_think(content: str) -> tuple[str, str]:
    """Some chat templates open the think block themselves, so only `</think>` arrives."""
    for close in ("</think>", "</thinking>"):
        before, found, after = content.partition(close)
        if found:
            return after.lstrip(), before
    return content, ""


def _parse_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    if isinstance(raw, dict):
        return raw, None
    if not isinstance(raw, str):
        return {}, f"tool arguments must be a JSON object, got {type(raw).__name__}"
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
        if isinstance(value, str):  # double-encoded by some models
            value = json.loads(value)
    except ValueError as exc:
        return {}, f"tool arguments are not valid JSON ({exc}): {raw[:200]}"
    if not isinstance(value, dict):
        return {}, f"tool arguments must be a JSON object, got {type(value).__name__}: {raw[:200]}"
    return value, None
