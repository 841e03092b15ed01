"""LLMProvider for any server speaking the OpenAI chat-completions protocol (OpenAI, vLLM,
llama.cpp, Ollama, LM Studio...).

It always streams. When a server answers 400 to a feature it lacks (stream_options, tools,
response_format), the call is retried without it and the endpoint is remembered, so later calls
go straight to what works: tools described in the system prompt, JSON asked for in words.
"""

import email.utils
import json
import logging
import math
import re
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import httpx
import openai

from agents_app.engine.jsonparse import extract_json_object
from agents_app.engine.llm import (
    LLMError,
    LLMRequest,
    LLMResponse,
    ToolCallRequest,
    ToolSchema,
    Usage,
)

logger = logging.getLogger(__name__)

# Per-kind caps on retries; the constructor's max_retries caps them all.
RATE_LIMIT_RETRIES = 5
CONNECTION_RETRIES = 3
TIMEOUT_RETRIES = 1
MAX_RETRY_AFTER = 60.0
MAX_BACKOFF = 60.0
# Local servers ignore the key, but the SDK wants one.
PLACEHOLDER_API_KEY = "not-needed"

FORMAT_MODES = ("json_schema", "json_object", "prompt")
_REJECTED_STATUSES = (400, 422)
_TRANSIENT_STATUSES = (408,)


@dataclass(frozen=True)
class _Features:
    """What a call sends. Each 400 degrades one of them; a success is remembered per endpoint."""

    stream_options: bool = True
    native_tools: bool = True
    format_mode: str = "json_schema"


_endpoint_features: dict[tuple[str, str], _Features] = {}
_endpoint_lock = threading.Lock()


def forget_endpoint_features() -> None:
    """Forget what every endpoint was found to reject (for tests, or after a server upgrade)."""
    with _endpoint_lock:
        _endpoint_features.clear()


class _Transient(Exception):
    """An answer that was not usable (empty, cut off, garbled): worth asking again."""


class _DeadlineReached(Exception):
    pass


class OpenAICompatibleProvider:
    """Calls one model on one OpenAI-compatible server. Thread-safe; keep one per process."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        request_timeout: float = 120,
        max_retries: int = 5,
        retry_base_delay: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise LLMError(
                "LLM_NOT_CONFIGURED",
                f"the LLM base URL must start with http:// or https://, got {base_url!r}",
            )
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.request_timeout = request_timeout
        self.max_retries = max_retries
        self.retry_base_delay = retry_base_delay
        self._sleep = sleep
        try:
            self._client = openai.OpenAI(
                base_url=self.base_url,
                api_key=api_key or PLACEHOLDER_API_KEY,
                max_retries=0,  # retries are ours: they know the deadline and the fallbacks
                timeout=request_timeout,
            )
        except Exception as exc:
            raise LLMError("LLM_NOT_CONFIGURED", f"invalid LLM settings: {exc}") from exc

    def close(self) -> None:
        self._client.close()

    def complete(self, request: LLMRequest) -> LLMResponse:
        """Return the model's answer. Raises LLMError (RATE_LIMITED, CONNECTION_REFUSED,
        REQUEST_TIMEOUT, INVALID_RESPONSE, MAX_RETRIES_EXCEEDED) and nothing else."""
        try:
            return self._complete(request)
        except LLMError:
            raise
        except Exception as exc:
            # The SDK or an odd server answer surprised us; callers only know LLMError.
            logger.exception("unexpected failure calling the LLM at %s", self.base_url)
            raise LLMError(
                "INVALID_RESPONSE",
                f"unexpected failure talking to the LLM server: {exc!r}",
                self._details(),
            ) from exc

    # --- the retry loop -------------------------------------------------------------------

    def _complete(self, request: LLMRequest) -> LLMResponse:
        deadline = time.monotonic() + request.timeout
        endpoint = (self.base_url, self.model)
        with _endpoint_lock:
            features = _endpoint_features.get(endpoint, _Features())
        untried: list[_Features] | None = None  # guesses left after a 400 that names nothing
        retries: Counter[str] = Counter()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._timed_out(request)
            retry_after = None
            try:
                response = self._attempt(
                    request, features, min(remaining, self.request_timeout), deadline
                )
            except openai.APIStatusError as exc:
                status, message = exc.status_code, _server_message(exc)
                details = self._details(status=status, server_message=message)
                if status in _REJECTED_STATUSES:
                    named = _degrade_named(features, request, message)
                    if named is not None:
                        features, untried = named, None
                        continue
                    if untried is None:
                        untried = _degrade_guesses(features, request)
                    if untried:
                        features = untried.pop(0)
                        continue
                    raise LLMError(
                        "INVALID_RESPONSE",
                        f"the LLM server refused the request: {message}",
                        details,
                    ) from exc
                if status in (401, 403):
                    raise LLMError(
                        "INVALID_RESPONSE", "the LLM server refused the API key", details
                    ) from exc
                if status == 429:
                    code, limit = "RATE_LIMITED", RATE_LIMIT_RETRIES
                    failure = f"the LLM server is rate limiting us: {message}"
                    retry_after = _retry_after(exc.response.headers)
                elif status >= 500 or status in _TRANSIENT_STATUSES:
                    code, limit = "MAX_RETRIES_EXCEEDED", self.max_retries
                    failure = f"the LLM server keeps failing ({status}): {message}"
                else:
                    hint = " (check LLM_BASE_URL and LLM_MODEL)" if status == 404 else ""
                    raise LLMError(
                        "INVALID_RESPONSE",
                        f"the LLM server answered {status}: {message}{hint}",
                        details,
                    ) from exc
            except (openai.APITimeoutError, httpx.TimeoutException, _DeadlineReached):
                if time.monotonic() >= deadline:
                    raise self._timed_out(request) from None
                code, limit = "REQUEST_TIMEOUT", TIMEOUT_RETRIES
                failure = f"the LLM server did not answer within {self.request_timeout:g} s"
            except openai.APIConnectionError as exc:
                code, limit = "CONNECTION_REFUSED", CONNECTION_RETRIES
                failure = f"cannot reach the LLM server at {self.base_url}: {exc.__cause__ or exc}"
            except _Transient as exc:
                code, limit, failure = "INVALID_RESPONSE", self.max_retries, str(exc)
            else:
                _remember(endpoint, features, request)
                return response

            attempts = retries.total() + 1
            if retries[code] >= min(limit, self.max_retries) or retries.total() >= self.max_retries:
                raise LLMError(
                    code,
                    f"{failure} (gave up after {attempts} attempts)",
                    self._details(attempts=attempts),
                )
            delay = min(self.retry_base_delay * 2 ** retries.total(), MAX_BACKOFF)
            if retry_after is not None:
                delay = min(retry_after, MAX_RETRY_AFTER)
            if time.monotonic() + delay >= deadline:
                if code == "REQUEST_TIMEOUT":
                    raise self._timed_out(request)
                raise LLMError(
                    code, f"{failure} (no time left to retry)", self._details(attempts=attempts)
                )
            logger.info("LLM call failed (%s: %s); retrying in %.2f s", code, failure, delay)
            retries[code] += 1
            self._sleep(delay)

    def _timed_out(self, request: LLMRequest) -> LLMError:
        return LLMError(
            "REQUEST_TIMEOUT",
            f"the LLM server did not answer within {request.timeout:g} s",
            self._details(timeout=request.timeout),
        )

    def _details(self, **extra: Any) -> dict[str, Any]:
        return {"base_url": self.base_url, "model": self.model, **extra}

    # --- one HTTP call --------------------------------------------------------------------

    def _attempt(
        self, request: LLMRequest, features: _Features, timeout: float, deadline: float
    ) -> LLMResponse:
        arguments = _request_arguments(request, features)
        tools_in_prompt = bool(request.tools) and not features.native_tools
        # Streaming the JSON of a prompted tool call would show the user noise; the final
        # answer is passed on in one piece once it is known.
        collector = _StreamCollector(request.on_token, live=not tools_in_prompt)
        stream = self._client.chat.completions.create(
            model=self.model, stream=True, timeout=timeout, **arguments
        )
        with stream:
            try:
                for chunk in stream:
                    collector.add(chunk)
                    if time.monotonic() >= deadline:
                        raise _DeadlineReached
            except (openai.APITimeoutError, _DeadlineReached):
                raise
            except openai.APIConnectionError as exc:
                raise _Transient(f"the LLM server cut the answer short: {exc}") from exc
            except openai.APIError as exc:
                raise _Transient(f"the LLM server reported an error mid-answer: {exc}") from exc
            except (ValueError, TypeError, AttributeError, KeyError) as exc:
                raise _Transient(f"the LLM server sent a garbled stream: {exc}") from exc

        content, reasoning = collector.finish()
        tool_calls = collector.tool_calls()
        if not collector.finished:
            raise _Transient(
                "the LLM answer stream ended before the model finished (cut off, or not a stream)"
            )
        if tools_in_prompt:
            content, tool_calls = _tool_calls_from_text(content)
            if content and not tool_calls:
                collector.emit(content)
        if not content.strip() and not tool_calls:
            raise _Transient("the model returned an empty answer")

        usage = collector.usage
        if usage is None:
            # No usage from the server (stream_options unsupported): estimate ~4 characters a
            # token so budgets still count something.
            sent = sum(len(json.dumps(m, default=str)) for m in arguments["messages"])
            produced = (
                len(content)
                + len(reasoning)
                + sum(len(json.dumps(c.arguments)) for c in tool_calls)
            )
            usage = Usage(
                prompt_tokens=math.ceil(sent / 4), completion_tokens=math.ceil(produced / 4)
            )
        parsed = extract_json_object(content) if request.response_schema is not None else None
        return LLMResponse(
            content=content,
            tool_calls=tool_calls,
            reasoning=reasoning,
            usage=usage,
            model=collector.model or self.model,
            parsed=parsed,
        )


def provider_from_settings() -> OpenAICompatibleProvider:
    """The provider configured by Django settings LLM_*. Raises LLMError LLM_NOT_CONFIGURED."""
    from django.conf import settings

    base_url = (getattr(settings, "LLM_BASE_URL", "") or "").strip()
    model = (getattr(settings, "LLM_MODEL", "") or "").strip()
    missing = [
        name for name, value in (("LLM_BASE_URL", base_url), ("LLM_MODEL", model)) if not value
    ]
    if missing:
        raise LLMError(
            "LLM_NOT_CONFIGURED",
            f"no LLM is configured: set {' and '.join(missing)} "
            "(for example LLM_BASE_URL=http://127.0.0.1:11434/v1 LLM_MODEL=qwen2.5:7b)",
            {"missing": missing},
        )
    return OpenAICompatibleProvider(
        base_url=base_url,
        api_key=getattr(settings, "LLM_API_KEY", "") or "",
        model=model,
        request_timeout=float(getattr(settings, "LLM_REQUEST_TIMEOUT", 120.0)),
        max_retries=int(getattr(settings, "LLM_MAX_RETRIES", 5)),
        retry_base_delay=float(getattr(settings, "LLM_RETRY_BASE_DELAY", 1.0)),
    )


# --- what to send ---------------------------------------------------------------------------


def _request_arguments(request: LLMRequest, features: _Features) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    messages = request.messages
    instructions = []
    if request.tools and features.native_tools:
        arguments["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in request.tools
        ]
    elif request.tools:
        messages = _without_tool_roles(messages)
        instructions.append(_tools_instructions(request.tools))
    if request.response_schema is not None:
        if features.format_mode == "json_schema":
            arguments["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": re.sub(r"[^A-Za-z0-9_-]", "_", request.response_schema_name)[:64]
                    or "response",
                    "schema": request.response_schema,
                    "strict": False,
                },
            }
        else:
            instructions.append(
                "Answer with one JSON object and nothing else (no prose, no code fence), "
                f"matching this JSON schema:\n{json.dumps(request.response_schema)}"
            )
            if features.format_mode == "json_object":
                arguments["response_format"] = {"type": "json_object"}
    if features.stream_options:
        arguments["stream_options"] = {"include_usage": True}
    arguments["messages"] = _with_system_text(messages, "\n\n".join(instructions))
    return arguments


def _with_system_text(messages: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    if not text:
        return messages
    if (
        messages
        and messages[0].get("role") == "system"
        and isinstance(messages[0].get("content"), str)
    ):
        return [{**messages[0], "content": f"{messages[0]['content']}\n\n{text}"}, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]


def _tools_instructions(tools: list[ToolSchema]) -> str:
    lines = ["You can use these tools:"]
    for tool in tools:
        lines.append(f"- {tool.name}: {tool.description}")
        lines.append(f"  arguments (JSON schema): {json.dumps(tool.parameters)}")
    lines.append(
        "\nAnswer with exactly one JSON object and nothing else.\n"
        'To call tools: {"tool_calls": [{"name": "<tool name>", "arguments": {...}}]}\n'
        'To give your final answer: {"final": "<your answer>"}'
    )
    return "\n".join(lines)


def _without_tool_roles(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation rewritten for a server without tools: it may reject the `tool` role and
    `tool_calls` fields, so calls become assistant JSON and results become user text."""
    names: dict[str, str] = {}
    rewritten: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "assistant" and message.get("tool_calls"):
            calls = []
            for call in message["tool_calls"]:
                function = call.get("function") or {}
                names[call.get("id", "")] = function.get("name", "")
                arguments, _ = _parse_arguments(function.get("arguments") or "")
                calls.append({"name": function.get("name", ""), "arguments": arguments})
            text = (message.get("content") or "").strip()
            call_json = json.dumps({"tool_calls": calls})
            rewritten.append({"role": "assistant", "content": f"{text}\n{call_json}".strip()})
        elif role == "tool":
            name = names.get(message.get("tool_call_id", ""), "tool")
            result = f"Result of {name}:\n{message.get('content') or ''}"
            previous = rewritten[-1] if rewritten else None
            if previous is not None and previous.get("_tool_results"):
                previous["content"] += f"\n\n{result}"
            else:
                rewritten.append({"role": "user", "content": result, "_tool_results": True})
        else:
            rewritten.append(message)
    return [{k: v for k, v in m.items() if k != "_tool_results"} for m in rewritten]


# --- what came back -------------------------------------------------------------------------


class _StreamCollector:
    """Accumulates streamed chunks: content (minus a leading think block), reasoning, tool calls."""

    def __init__(self, on_token: Callable[[str], None] | None, *, live: bool = True) -> None:
        self._on_token = on_token
        self._live = live  # pass content on as it streams
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._think = _ThinkSplitter()
        self._calls: list[dict[str, Any]] = []
        self._slots: dict[int, int] = {}
        self.usage: Usage | None = None
        self.model = ""
        self.finished = False

    def add(self, chunk: Any) -> None:
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
            delta = choice.delta
            if delta is None:
                continue
            # Servers name it either way; some send both with the same text.
            for name in ("reasoning_content", "reasoning"):
                piece = getattr(delta, name, None)
                if isinstance(piece, str) and piece:
                    self._reasoning.append(piece)
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


def _tool_calls_from_text(content: str) -> tuple[str, list[ToolCallRequest]]:
    """Read the JSON answer asked for by _tools_instructions; plain text is a final answer."""
    found = extract_json_object(content)
    if found is None:
        return content, []
    if "name" in found and "arguments" in found and "tool_calls" not in found:
        found = {"tool_calls": [found]}
    items = found.get("tool_calls")
    if isinstance(items, list) and items:
        calls = []
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                continue
            arguments, error = _parse_arguments(item.get("arguments", {}))
            calls.append(
                ToolCallRequest(f"call_{uuid.uuid4().hex[:12]}", item["name"], arguments, error)
            )
        if calls:
            return "", calls
    if "final" in found:
        final = found["final"]
        return (final if isinstance(final, str) else json.dumps(final)), []
    return content, []


def _server_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"]
    if isinstance(body, str) and body.strip():
        return body.strip()[:500]
    return exc.message


def _retry_after(headers: Any) -> float | None:
    try:
        milliseconds = headers.get("retry-after-ms")
        if milliseconds:
            return max(0.0, float(milliseconds) / 1000)
        value = headers.get("retry-after")
        if not value:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            moment = email.utils.parsedate_to_datetime(value)
            return max(0.0, moment.timestamp() - time.time())
    except (TypeError, ValueError, OverflowError):
        return None


# --- degrading features ---------------------------------------------------------------------


def _next_format(features: _Features) -> _Features:
    position = FORMAT_MODES.index(features.format_mode)
    return replace(features, format_mode=FORMAT_MODES[min(position + 1, len(FORMAT_MODES) - 1)])


def _degrade_named(features: _Features, request: LLMRequest, message: str) -> _Features | None:
    """Drop the feature a 400 names, if it names one we sent."""
    text = message.lower()
    if features.stream_options and ("stream_options" in text or "include_usage" in text):
        return replace(features, stream_options=False)
    schema_words = ("response_format", "json_schema", "json_object", "grammar")
    if (
        request.response_schema is not None
        and features.format_mode != "prompt"
        and any(word in text for word in schema_words)
    ):
        return _next_format(features)
    if request.tools and features.native_tools and ("tool" in text or "function" in text):
        return replace(features, native_tools=False)
    return None


def _degrade_guesses(features: _Features, request: LLMRequest) -> list[_Features]:
    """What to try, in turn, after a 400 that names nothing: each feature alone (the cheapest
    loss first), then all of them, so a vague 400 does not cost more than it has to."""
    guesses = []
    if features.stream_options:
        guesses.append(replace(features, stream_options=False))
    if request.response_schema is not None:
        degraded = features
        while degraded.format_mode != "prompt":
            degraded = _next_format(degraded)
            guesses.append(degraded)
    if request.tools and features.native_tools:
        guesses.append(replace(features, native_tools=False))
    everything = replace(
        features,
        stream_options=False,
        native_tools=features.native_tools and not request.tools,
        format_mode="prompt" if request.response_schema is not None else features.format_mode,
    )
    if everything != features and everything not in guesses:
        guesses.append(everything)
    return guesses


def _remember(endpoint: tuple[str, str], used: _Features, request: LLMRequest) -> None:
    """Record what this successful call had to do without; only ever downgrades."""
    with _endpoint_lock:
        known = _endpoint_features.get(endpoint, _Features())
        updated = replace(
            known,
            stream_options=known.stream_options and used.stream_options,
            native_tools=known.native_tools and (used.native_tools or not request.tools),
        )
        if request.response_schema is not None and FORMAT_MODES.index(
            used.format_mode
        ) > FORMAT_MODES.index(known.format_mode):
            updated = replace(updated, format_mode=used.format_mode)
        if updated != known:
            logger.info(
                "LLM endpoint %s (%s) does not support %s", endpoint[0], endpoint[1], updated
            )
            _endpoint_features[endpoint] = updated
