"""LLMProvider for any server speaking the OpenAI chat-completions protocol (OpenAI, vLLM,
llama.cpp, Ollama, LM Studio...).

It always streams. When a server answers 400 to a feature it lacks (stream_options, tools,
tool_choice, response_format, max_tokens), the call is retried without it and the endpoint is
remembered, so later calls go straight to what works: tools described in the system prompt and
answered through a JSON schema, JSON asked for in words. A server that accepts `tools` but never
calls one is found out too: from its own capability report (llama.cpp's `/props`) before the
first call with tools, else from an answer without a tool call where one was required.
"""

import email.utils
import json
import logging
import math
import os
import re
import ssl
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import httpx
import openai

from agents_app.core.errors import ErrorCode
from agents_app.engine.jsonparse import extract_json_object
from agents_app.engine.llm import (
    LLMError,
    LLMRequest,
    LLMResponse,
    RetryNotice,
    Usage,
)
from agents_app.engine.openai_fallbacks import (
    FORMAT_MODES,
    _degrade_guesses,
    _degrade_named,
    _Features,
    _format_needed,
    _tool_calls_from_text,
    _tools_answer_schema,
    _tools_instructions,
    _with_system_text,
    _without_tool_roles,
)
from agents_app.engine.openai_stream import _StreamCollector

logger = logging.getLogger(__name__)

# Per-kind caps on retries; the constructor's max_retries caps them all.
RATE_LIMIT_RETRIES = 5
CONNECTION_RETRIES = 3
TIMEOUT_RETRIES = 1
MAX_RETRY_AFTER = 60.0
MAX_BACKOFF = 60.0
# A wait between attempts looks for a cancel this often.
WAIT_SLICE = 0.25
# Local servers ignore the key, but the SDK wants one.
PLACEHOLDER_API_KEY = "not-needed"

_REJECTED_STATUSES = (400, 422)
_TRANSIENT_STATUSES = (408,)
# How long asking a server for its capabilities (GET /props) may take.
PROBE_TIMEOUT = 3.0


_endpoint_features: dict[tuple[str, str], _Features] = {}
# What each endpoint's capability report said about tools: True, False, or None (no report).
_probed: dict[tuple[str, str], bool | None] = {}
_endpoint_lock = threading.Lock()


def endpoint_capabilities(base_url: str, model: str) -> dict[str, Any]:
    """What this process has found the endpoint accepts, as plain JSON for people to read
    (the worker records it on the LLM connection): the defaults until a fallback was needed."""
    endpoint = (base_url.rstrip("/"), model)
    with _endpoint_lock:
        features = _endpoint_features.get(endpoint, _Features())
        reported = _probed.get(endpoint)
    return {
        "stream_options": features.stream_options,
        "tools": "native" if features.native_tools else "described in the prompt",
        "tool_choice": features.tool_choice,
        "structured_output": features.format_mode,
        "max_tokens_field": features.max_tokens_field,
        "reports_tool_support": reported,
    }


def forget_endpoint_features() -> None:
    """Forget what every endpoint was found to reject (for tests, or after a server upgrade)."""
    with _endpoint_lock:
        _endpoint_features.clear()
        _probed.clear()


class _Meter:
    """What one `complete` cost over all its attempts, failed and cut-off ones included."""

    def __init__(self) -> None:
        self.total = Usage()

    def add(self, usage: Usage) -> None:
        self.total = Usage(
            self.total.prompt_tokens + usage.prompt_tokens,
            self.total.completion_tokens + usage.completion_tokens,
        )


class _Transient(Exception):
    """An answer that was not usable (empty, cut off, garbled): worth asking again. `said`:
    the server's own words about it, if any (staff's to read: LLMError.server_text)."""

    def __init__(self, message: str, *, said: str = "") -> None:
        super().__init__(message)
        self.said = said


def _said(error: LLMError, said: str) -> LLMError:
    """`error` with what the server said about it (LLMError.server_text)."""
    error.server_text = said
    return error


class _DeadlineReached(Exception):
    pass


_shared_lock = threading.RLock()  # _shared_client holds it while _tls_context takes it
_tls: dict[int, ssl.SSLContext] = {}


def _tls_context() -> ssl.SSLContext:
    """The process's TLS context, as httpx builds it (certifi, or SSL_CERT_FILE / SSL_CERT_DIR):
    building one reads the CA bundle (some 25 ms)."""
    pid = os.getpid()  # a forked child builds its own
    with _shared_lock:
        context = _tls.get(pid)
        if context is None:
            _tls.clear()
            context = _tls[pid] = httpx.create_ssl_context()
        return context


# The process's clients, by server, key and timeout: a worker makes a provider for every run,
# and a client of its own each time would cost its building and a new connection to the server
# (a TLS handshake, for a remote one). A client is thread-safe (its connection pool is), and a
# forked child makes its own: its parent's connections are not its to use.
_clients: dict[tuple[int, str, str, float], openai.OpenAI] = {}
CLIENTS_KEPT = 32


def _shared_client(base_url: str, api_key: str, timeout: float) -> openai.OpenAI:
    key = (os.getpid(), base_url, api_key, timeout)
    # Made under the lock: a hundred runs starting at once would otherwise each build one
    # (tens of ms each: the TLS context, the SDK's client) before the first was kept.
    with _shared_lock:
        client = _clients.get(key)
        if client is not None:
            return client
        if len(_clients) >= CLIENTS_KEPT or any(k[0] != key[0] for k in _clients):
            _clients.clear()  # forgotten, not closed: another thread may be using one
        client = _clients[key] = openai.OpenAI(
            base_url=base_url,
            api_key=api_key,
            max_retries=0,  # retries are ours: they know the deadline and the fallbacks
            timeout=timeout,
            http_client=openai.DefaultHttpxClient(verify=_tls_context()),
        )
        return client


class _ToolsIgnored(Exception):
    """A tool call was required and the server answered without one: it ignores `tools`."""


class _Interrupted(Exception):
    """The request's interrupt callback raised `reason`; it leaves complete() unchanged."""

    def __init__(self, reason: BaseException) -> None:
        super().__init__(repr(reason))
        self.reason = reason


class OpenAICompatibleProvider:
    """Calls one model on one OpenAI-compatible server. Thread-safe; its HTTP client is the
    process's for that server (`_shared_client`)."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        request_timeout: float = 120,
        max_retries: int = 5,
        retry_base_delay: float = 1.0,
        temperature: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise LLMError(
                ErrorCode.LLM_NOT_CONFIGURED,
                f"the LLM base URL must start with http:// or https://, got {base_url!r}",
            )
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.request_timeout = request_timeout
        self.max_retries = max_retries
        self.retry_base_delay = retry_base_delay
        # None: the server's own default (llama.cpp's is 0.8, much for a small model).
        self.temperature = temperature
        self._sleep = sleep
        try:
            self._client = _shared_client(
                self.base_url, api_key or PLACEHOLDER_API_KEY, request_timeout
            )
        except Exception as exc:
            raise LLMError(ErrorCode.LLM_NOT_CONFIGURED, f"invalid LLM settings: {exc}") from exc

    def close(self) -> None:
        """Close the client this provider shares with the process's others for its server:
        the next provider for it makes a new one."""
        with _shared_lock:
            for key, client in list(_clients.items()):
                if client is self._client:
                    del _clients[key]
        self._client.close()

    def complete(self, request: LLMRequest) -> LLMResponse:
        """Return the model's answer. Raises LLMError (RATE_LIMITED, CONNECTION_REFUSED,
        REQUEST_TIMEOUT, INVALID_RESPONSE, MAX_RETRIES_EXCEEDED), or what `request.interrupt`
        raised. The answer's usage, and an LLMError's, add up every attempt the call made."""
        meter = _Meter()
        try:
            response = self._complete(request, meter)
        except _Interrupted as stop:
            raise stop.reason from None
        except LLMError as exc:
            exc.usage = meter.total
            raise
        except Exception as exc:
            # The SDK or an odd server answer surprised us; callers only know LLMError.
            logger.exception("unexpected failure calling the LLM at %s", self.base_url)
            error = LLMError(
                ErrorCode.INVALID_RESPONSE,
                f"unexpected failure talking to the LLM server: {exc!r}",
                self._details(),
            )
            error.usage = meter.total
            raise error from exc
        return replace(response, usage=meter.total)

    # --- the retry loop -------------------------------------------------------------------

    def _complete(self, request: LLMRequest, meter: _Meter) -> LLMResponse:
        deadline = time.monotonic() + request.timeout
        endpoint = (self.base_url, self.model)
        if request.tools:
            self._probe(endpoint)
        with _endpoint_lock:
            features = _endpoint_features.get(endpoint, _Features())
        untried: list[_Features] | None = None  # guesses left after a 400 that names nothing
        retries: Counter[str] = Counter()
        # What the server last said in an error of its own: staff's to read (LLMError).
        said = ""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._timed_out(request)
            retry_after = None
            try:
                response = self._attempt(
                    request, features, min(remaining, self.request_timeout), deadline, meter
                )
            except openai.APIStatusError as exc:
                status, message = exc.status_code, _server_message(exc)
                details = self._details(status=status)
                said = message
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
                    raise _said(
                        LLMError(
                            ErrorCode.INVALID_RESPONSE,
                            f"the LLM server refused the request ({status})",
                            details,
                        ),
                        said,
                    ) from exc
                if status in (401, 403):
                    raise _said(
                        LLMError(
                            ErrorCode.INVALID_RESPONSE,
                            "the LLM server refused the API key",
                            details,
                        ),
                        said,
                    ) from exc
                if status == 429:
                    code, limit = ErrorCode.RATE_LIMITED, RATE_LIMIT_RETRIES
                    failure = "the LLM server is rate limiting us"
                    retry_after = _retry_after(exc.response.headers)
                elif status >= 500 or status in _TRANSIENT_STATUSES:
                    code, limit = ErrorCode.MAX_RETRIES_EXCEEDED, self.max_retries
                    failure = f"the LLM server keeps failing ({status})"
                else:
                    hint = " (check LLM_BASE_URL and LLM_MODEL)" if status == 404 else ""
                    raise _said(
                        LLMError(
                            ErrorCode.INVALID_RESPONSE,
                            f"the LLM server answered {status}{hint}",
                            details,
                        ),
                        said,
                    ) from exc
            except (openai.APITimeoutError, httpx.TimeoutException, _DeadlineReached):
                if time.monotonic() >= deadline:
                    raise self._timed_out(request) from None
                code, limit = ErrorCode.REQUEST_TIMEOUT, TIMEOUT_RETRIES
                failure = f"the LLM server did not answer within {self.request_timeout:g} s"
            except openai.APIConnectionError as exc:
                code, limit = ErrorCode.CONNECTION_REFUSED, CONNECTION_RETRIES
                failure = f"cannot reach the LLM server at {self.base_url}: {exc.__cause__ or exc}"
            except _Transient as exc:
                code, limit, failure = ErrorCode.INVALID_RESPONSE, self.max_retries, str(exc)
                said = exc.said or said
            except _ToolsIgnored:
                logger.info("LLM endpoint %s (%s) ignores tools", *endpoint)
                features = replace(features, native_tools=False)
                continue
            else:
                _remember(endpoint, features, request)
                return response

            self._back_off(
                request,
                retries,
                code=code,
                limit=limit,
                failure=failure,
                said=said,
                retry_after=retry_after,
                deadline=deadline,
            )

    def _back_off(
        self,
        request: LLMRequest,
        retries: Counter[str],
        *,
        code: ErrorCode,
        limit: int,
        failure: str,
        said: str,
        retry_after: float | None,
        deadline: float,
    ) -> None:
        """Wait before the next attempt after a failure of kind `code` (`limit` retries of
        that kind at most), counted in `retries`. Raises LLMError when it may not be retried:
        a cap reached, or no time left before `deadline`."""
        attempts = retries.total() + 1
        if retries[code] >= min(limit, self.max_retries) or retries.total() >= self.max_retries:
            raise _said(
                LLMError(
                    code,
                    f"{failure} (gave up after {attempts} attempts)",
                    self._details(attempts=attempts),
                ),
                said,
            )
        delay = min(self.retry_base_delay * 2 ** retries.total(), MAX_BACKOFF)
        if retry_after is not None:
            delay = min(retry_after, MAX_RETRY_AFTER)
        if time.monotonic() + delay >= deadline:
            if code == ErrorCode.REQUEST_TIMEOUT:
                raise self._timed_out(request)
            raise _said(
                LLMError(
                    code, f"{failure} (no time left to retry)", self._details(attempts=attempts)
                ),
                said,
            )
        # The log is operators': what the server said is in it (redacted, core.secrecy).
        logger.info(
            "LLM call failed (%s: %s%s); retrying in %.2f s",
            code,
            failure,
            f": {said}" if said else "",
            delay,
        )
        retries[code] += 1
        if request.on_retry is not None:
            # The retries left: this kind's, within the cap on all of them.
            left = min(
                min(limit, self.max_retries) - retries[code], self.max_retries - retries.total()
            )
            request.on_retry(
                RetryNotice(
                    code=str(code),
                    reason=failure,
                    delay=delay,
                    attempt=attempts + 1,
                    attempts=attempts + 1 + left,
                )
            )
        self._wait(delay, request)

    def _wait(self, delay: float, request: LLMRequest) -> None:
        """Sleep `delay` seconds between attempts, in slices, so that a cancel
        (request.interrupt raising) ends the wait at once."""
        if request.interrupt is None:
            self._sleep(delay)
            return
        end = time.monotonic() + delay
        while (left := end - time.monotonic()) > 0:
            try:
                request.interrupt()
            except Exception as exc:
                raise _Interrupted(exc) from exc
            self._sleep(min(left, WAIT_SLICE))

    def _timed_out(self, request: LLMRequest) -> LLMError:
        return LLMError(
            ErrorCode.REQUEST_TIMEOUT,
            f"the LLM server did not answer within {request.timeout:g} s",
            self._details(timeout=request.timeout),
        )

    def _details(self, **extra: Any) -> dict[str, Any]:
        return {"base_url": self.base_url, "model": self.model, **extra}

    def _probe(self, endpoint: tuple[str, str]) -> None:
        """Once per endpoint: ask the server what its chat template supports (llama.cpp answers
        GET /props with `chat_template_caps`). A server that says it cannot call tools gets
        them described in the prompt from the first call on. Anything else: nothing learnt."""
        with _endpoint_lock:
            if endpoint in _probed:
                return
            _probed[endpoint] = None
        root = re.sub(r"/v1$", "", self.base_url)
        try:
            answer = self._client._client.get(
                f"{root}/props",
                timeout=PROBE_TIMEOUT,
                headers={"Authorization": f"Bearer {self._client.api_key}"},
            )
            caps = answer.json().get("chat_template_caps") if answer.status_code == 200 else None
        except Exception:
            # The SDK's HTTP client is its own (httpx2, not httpx), so its errors are caught
            # whole: an unreachable server must reach the real call and fail there as
            # CONNECTION_REFUSED, not as an odd answer to a probe that teaches nothing.
            return
        if not isinstance(caps, dict):
            return
        supported = caps.get("supports_tool_calls", caps.get("supports_tools"))
        with _endpoint_lock:
            _probed[endpoint] = supported if isinstance(supported, bool) else None
        if supported is False:
            logger.info("LLM endpoint %s (%s) reports it cannot call tools", *endpoint)
            with _endpoint_lock:
                known = _endpoint_features.get(endpoint, _Features())
                _endpoint_features[endpoint] = replace(known, native_tools=False)

    # --- one HTTP call --------------------------------------------------------------------

    def _attempt(
        self,
        request: LLMRequest,
        features: _Features,
        timeout: float,
        deadline: float,
        meter: _Meter,
    ) -> LLMResponse:
        arguments = _request_arguments(request, features)
        if self.temperature is not None:
            arguments["temperature"] = self.temperature
        tools_in_prompt = bool(request.tools) and not features.native_tools
        # Streaming the JSON of a prompted tool call would show the user noise; the final
        # answer is passed on in one piece once it is known.
        collector = _StreamCollector(
            request.on_token, live=not tools_in_prompt, on_reasoning=request.on_reasoning
        )
        try:
            stream = self._client.chat.completions.create(
                model=self.model, stream=True, timeout=timeout, **arguments
            )
            with stream:
                try:
                    for chunk in stream:
                        collector.add(chunk)
                        if request.interrupt is not None:
                            try:
                                request.interrupt()
                            except BaseException as exc:
                                raise _Interrupted(exc) from exc
                        if time.monotonic() >= deadline:
                            raise _DeadlineReached
                except (openai.APITimeoutError, _DeadlineReached, _Interrupted):
                    raise
                except openai.APIConnectionError as exc:
                    raise _Transient(f"the LLM server cut the answer short: {exc}") from exc
                except openai.APIError as exc:
                    raise _Transient(
                        "the LLM server reported an error mid-answer", said=str(exc)
                    ) from exc
                except (ValueError, TypeError, AttributeError, KeyError) as exc:
                    raise _Transient(f"the LLM server sent a garbled stream: {exc}") from exc
        finally:
            if collector.started:
                meter.add(collector.usage or _estimate(arguments, collector.produced_chars()))

        content, reasoning = collector.finish()
        tool_calls = collector.tool_calls()
        if not collector.finished:
            raise _Transient(
                "the LLM answer stream ended before the model finished (cut off, or not a stream)"
            )
        cut_off = collector.finish_reason == "length"
        if tools_in_prompt:
            content, tool_calls = _tool_calls_from_text(content)
            if content and not tool_calls and not cut_off:
                collector.emit(content)
        elif request.tools and request.tool_required and not tool_calls and not cut_off:
            # Where the server reports it can call tools, prose is the model's own choice.
            with _endpoint_lock:
                reported = _probed.get((self.base_url, self.model))
            if reported is not True:
                raise _ToolsIgnored
        if not content.strip() and not tool_calls and not cut_off:
            raise _Transient("the model returned an empty answer")
        parsed = extract_json_object(content) if request.response_schema is not None else None
        return LLMResponse(
            content=content,
            tool_calls=tool_calls,
            reasoning=reasoning,
            model=collector.model or self.model,
            parsed=parsed,
            finish_reason=collector.finish_reason,
        )


def _estimate(arguments: dict[str, Any], produced_chars: int) -> Usage:
    """Usage when the server reports none (no stream_options, or cut off): ~4 characters a
    token, so budgets still count something."""
    sent = sum(len(json.dumps(m, default=str)) for m in arguments["messages"])
    return Usage(prompt_tokens=math.ceil(sent / 4), completion_tokens=math.ceil(produced_chars / 4))


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
        if request.tool_required and features.tool_choice:
            arguments["tool_choice"] = "required"
    elif request.tools:
        messages = _without_tool_roles(messages)
        instructions.append(_tools_instructions(request.tools, required=request.tool_required))
        if request.response_schema is None and features.format_mode != "prompt":
            # The server's grammar keeps the answer to one of the shapes the prompt names.
            schema = _tools_answer_schema(request.tools, final=not request.tool_required)
            arguments["response_format"] = _response_format(features, "tool_call", schema)
    elif not features.native_tools:
        # No tools this time, but the history may hold calls: told as text, as above.
        messages = _without_tool_roles(messages)
    if request.max_tokens is not None:
        arguments[features.max_tokens_field] = request.max_tokens
    if request.response_schema is not None:
        if features.format_mode == "json_schema":
            arguments["response_format"] = _response_format(
                features, request.response_schema_name, request.response_schema
            )
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


def _response_format(features: _Features, name: str, schema: dict[str, Any]) -> dict[str, Any]:
    if features.format_mode == "json_object":
        return {"type": "json_object"}
    return {
        "type": "json_schema",
        "json_schema": {
            "name": re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "response",
            "schema": schema,
            "strict": False,
        },
    }


# --- what came back -------------------------------------------------------------------------


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


# --- remembering what each endpoint lacks ---------------------------------------------------


def _remember(endpoint: tuple[str, str], used: _Features, request: LLMRequest) -> None:
    """Record what this successful call had to do without; only ever downgrades."""
    with _endpoint_lock:
        known = _endpoint_features.get(endpoint, _Features())
        updated = replace(
            known,
            stream_options=known.stream_options and used.stream_options,
            native_tools=known.native_tools and (used.native_tools or not request.tools),
            tool_choice=known.tool_choice and used.tool_choice,
            max_tokens_field=used.max_tokens_field
            if request.max_tokens is not None
            else known.max_tokens_field,
        )
        if _format_needed(request, used) and FORMAT_MODES.index(
            used.format_mode
        ) > FORMAT_MODES.index(known.format_mode):
            updated = replace(updated, format_mode=used.format_mode)
        if updated != known:
            logger.info(
                "LLM endpoint %s (%s) does not support %s", endpoint[0], endpoint[1], updated
            )
            _endpoint_features[endpoint] = updated
