"""The OpenAI chat-completions wire format of a reply (the script format of
tests/support/script.py: content, reasoning, tool_calls, finish_reason, usage): as one JSON body
or as the chunks of a stream. The demo server and the tests' scripted server both speak it."""

import json
import re
import time
import uuid
from typing import Any

MODEL = "scripted"


def usage(reply: dict[str, Any], default: dict[str, int]) -> dict[str, int]:
    counted = {**default, **(reply.get("usage") or {})}
    counted["total_tokens"] = counted["prompt_tokens"] + counted["completion_tokens"]
    return counted


def chunk(
    completion_id: str, choices: list[dict[str, Any]], model: str = MODEL, **extra: Any
) -> dict[str, Any]:
    return {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": choices,
        **extra,
    }


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:12]}"


def new_completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex[:12]}"


def completion(
    reply: dict[str, Any], default_usage: dict[str, int], model: str = MODEL
) -> dict[str, Any]:
    """The whole answer, as a request without `stream` gets it."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
    if reply.get("reasoning"):
        message["reasoning_content"] = reply["reasoning"]
    tool_calls = reply.get("tool_calls") or []
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": call.get("id") or new_call_id(),
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": call["arguments"]
                    if isinstance(call.get("arguments"), str)
                    else json.dumps(call.get("arguments", {})),
                },
            }
            for call in tool_calls
        ]
    return {
        "id": new_completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": usage(reply, default_usage),
    }


def tool_call_deltas(index: int, call: dict[str, Any]) -> list[dict[str, Any]]:
    """A tool call as a stream sends it: its head, then its arguments in a few fragments."""
    arguments = call.get("arguments", {})
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    head = {
        "index": index,
        "id": call.get("id") or new_call_id(),
        "type": "function",
        "function": {"name": call["name"], "arguments": ""},
    }
    return [
        {"tool_calls": [head]},
        *(
            {"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}
            for fragment in fragments(raw)
        ),
    ]


def pieces(text: str, count: int = 4) -> list[str]:
    """Split text into about `count` pieces at word boundaries, the way tokens arrive."""
    words = re.findall(r"\s*\S+\s*", text) or ([text] if text else [])
    size = max(1, -(-len(words) // count))
    return ["".join(words[i : i + size]) for i in range(0, len(words), size)]


def fragments(raw: str, count: int = 3) -> list[str]:
    size = max(1, -(-len(raw) // count))
    return [raw[i : i + size] for i in range(0, len(raw), size)] or [""]


def model_entry(model: str = MODEL, owner: str = "tests") -> dict[str, Any]:
    return {"id": model, "object": "model", "created": 0, "owned_by": owner}


def error_body(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}
