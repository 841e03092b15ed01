"""A model call as it is recorded (issue 36): what was asked, as a hash, and what came back.

`request_sha256` is the one definition of "the same request": a replay compares it with the
recorded one to tell a prompt that drifted from an answer it may reuse. It covers what the
engine puts in an LLMRequest that decides the answer (messages, tools offered, the schema
asked for, the token limit, whether a tool must be called); the model and its temperature are
the provider's, recorded beside it. The messages are hashed as the engine wrote them, before
engine.calls wraps tool results in data blocks, and every data block's nonce is taken out
(engine.untrusted.without_nonces): a nonce is keyed by its process's secret, so the same
prompt written by a worker and by `runs_replay` would otherwise never be the same request.
"""

import hashlib
import json
import threading
from dataclasses import dataclass, field
from typing import Any

import zstandard

from agents_app.core.inputs import storable
from agents_app.engine.llm import LLMError, LLMRequest, LLMResponse, Usage
from agents_app.engine.untrusted import without_nonces


def request_text(request: LLMRequest) -> str:
    """`request`'s canonical JSON (keys sorted, no spaces, ASCII): what its hash is of, and
    what a replay's drift is shown as a diff of (engine.replay)."""
    canonical = {
        "messages": request.messages,
        "tools": [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in request.tools
        ],
        "response_schema": request.response_schema,
        "response_schema_name": request.response_schema_name if request.response_schema else "",
        "max_tokens": request.max_tokens,
        "tool_required": request.tool_required,
    }
    # The data blocks' nonces are this process's (engine.untrusted): another process writes
    # the same prompt with others, which a replay must not take for drift.
    return without_nonces(json.dumps(canonical, sort_keys=True, separators=(",", ":"), default=str))


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def request_sha256(request: LLMRequest) -> str:
    """The hex SHA-256 of `request`'s canonical JSON (request_text)."""
    return text_sha256(request_text(request))


# ModelExchange.calls: a JSON line of the calls, each an array of these, in this order...
CALL_FIELDS = (
    "sha",  # the request's hash (request_sha256)
    "content",
    "tool_calls",
    "reasoning",
    "finish_reason",
    "error_code",
    "error",
    "prompt_tokens",
    "completion_tokens",
    "model",
    "connection",  # the LLMConnection's id, or null
    "at",  # when it answered: seconds since the epoch
)
# ...then their requests' texts, one after another. A frame from this size on is compressed
# (Zstandard, level 1): a step's few calls are written as they are (compressing a request of
# 2 KB cost a step more time than anything else the recording does), a long tool loop's many
# requests, most of each the one before again, to a fraction.
COMPRESS_FROM = 8192
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_compressors = threading.local()


def pack_calls(
    calls: list[list[Any]], requests: list[str], *, seq: int, phase: str, attempt: int
) -> bytes:
    """The model calls of one lane that one commit writes, as one frame: {"seq": the first
    call's number, "phase", "attempt", "calls": [[CALL_FIELDS...]...], "requests": [each
    request's length]}, a newline, then the requests' canonical texts; compressed from
    COMPRESS_FROM bytes. Each thread keeps its compressor (one is not safe to share, and
    making one costs twice the compressing)."""
    header = json.dumps(
        {
            "seq": seq,
            "phase": phase,
            "attempt": attempt,
            "calls": calls,
            "requests": [len(r) for r in requests],
        }
    )
    payload = "\n".join([header, "".join(requests)]).encode()
    if len(payload) < COMPRESS_FROM:
        return payload
    compressor = getattr(_compressors, "zstd", None)
    if compressor is None:
        compressor = _compressors.zstd = zstandard.ZstdCompressor(level=1)
    return compressor.compress(payload)


def unpack_calls(frame: bytes) -> list[dict[str, Any]]:
    """The calls of a frame pack_calls made: CALL_FIELDS, "seq" (each its own), "phase",
    "attempt" and "request", its request's text."""
    frame = bytes(frame)
    if frame[:4] == ZSTD_MAGIC:
        frame = zstandard.ZstdDecompressor().decompress(frame)
    head, _, body = frame.decode().partition("\n")
    header = json.loads(head)
    found, at = [], 0
    for i, (values, length) in enumerate(zip(header["calls"], header["requests"], strict=True)):
        call = dict(zip(CALL_FIELDS, values, strict=True))
        call["request"] = body[at : at + length]
        call.update(seq=header["seq"] + i, phase=header["phase"], attempt=header["attempt"])
        at += length
        found.append(call)
    return found


def framed(frame: bytes) -> bytes:
    """`frame` as Step.model_calls appends it: its length (4 bytes, big-endian) first."""
    return len(frame).to_bytes(4, "big") + frame


def unframed(appended: bytes) -> list[bytes]:
    """The frames `framed` appended one after another."""
    appended, frames, at = bytes(appended), [], 0
    while at < len(appended):
        length = int.from_bytes(appended[at : at + 4], "big")
        frames.append(appended[at + 4 : at + 4 + length])
        at += 4 + length
    return frames


@dataclass(frozen=True)
class Exchange:
    """One model call's outcome, as hooks.on_llm_exchange records it: the answer (text that
    a row can hold, engine.calls) or the error the call failed with after its retries."""

    phase: str  # engine.hooks.StreamPhase
    request_sha256: str
    # The request's canonical text (request_text), kept so a replay can show how a request
    # that drifted differs from the recorded one.
    request: str = ""
    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    reasoning: str = ""
    finish_reason: str = ""
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    connection_id: int | None = None  # LLMResponse.connection_id
    error_code: str = ""
    error: str = ""


def exchange_of(request: LLMRequest, response: LLMResponse, *, phase: str, text: str) -> Exchange:
    """The exchange of a call that answered (`response` as engine.calls returns it); `text`:
    the request's canonical text (request_text), which the caller made for what it sends."""
    return Exchange(
        phase=phase,
        request_sha256=text_sha256(text),
        request=text,
        content=response.content,
        tool_calls=[
            {
                "id": call.id,
                "name": call.name,
                # As the model sent them, in a form a row takes (the registry refuses the rest).
                "arguments": storable(call.arguments),
                "arguments_error": call.arguments_error,
            }
            for call in response.tool_calls
        ],
        reasoning=response.reasoning,
        finish_reason=response.finish_reason,
        usage=response.usage,
        model=response.model,
        connection_id=response.connection_id,
    )


def failed_exchange(
    request: LLMRequest, error: LLMError, model: str, *, phase: str, text: str
) -> Exchange:
    """The exchange of a call that failed after its retries: its code and AgentDesk's words."""
    return Exchange(
        phase=phase,
        request_sha256=text_sha256(text),
        request=text,
        usage=error.usage,
        model=model,
        error_code=str(error.code),
        error=error.message,
    )
