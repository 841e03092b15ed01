"""Reading a request (its messages, task, tool results) and writing the demo's replies (the
script format of agents_app.demo.wire), shared by every phase."""

import json
import re
from typing import Any

from agents_app.engine.untrusted import data_of

FINISH = "finish_task"
# Under every answer a person reads: the demo is no model.
SIGNATURE = "— AgentDesk's scripted demo, not a model."
# The engine's phase markers (engine.prompts, engine.team, engine.contract): a persona may come
# before them in the system message.
_MARKER = re.compile(r"AGENTDESK:(\w+)")
_TASK_END = (
    r"\n\nContext \(JSON\):|\n\nA previous plan|\n\nEarlier steps:|\n\nWhat was done:"
    r"|\nContext keys:|\n\nContext:|\n\nAn earlier attempt|\n\nTools:\n"
)
_TASK = re.compile(rf"Task:\s*(?P<task>.*?)(?:{_TASK_END}|\Z)", re.DOTALL)


def phase_of(messages: list[dict[str, Any]]) -> str:
    """The phase the engine asks for: the marker of the system message ("STEP" for a step)."""
    found = _MARKER.search(text_of(messages[0])) if messages else None
    return found.group(1) if found else ""


def messages_of(request: Any) -> list[dict[str, Any]]:
    """The messages of a request: a chat-completions body (the server) or an LLMRequest (the
    in-process provider)."""
    if isinstance(request, dict):
        return list(request.get("messages") or [])
    return list(getattr(request, "messages", []) or [])


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def task_of(messages: list[dict[str, Any]]) -> str:
    for message in messages[:2]:
        found = _TASK.search(text_of(message))
        if found:
            return found.group("task").strip()
    return ""


def results_of(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], Any]]:
    """The tool calls of this conversation with their results: (tool, arguments, result), the
    result parsed from JSON when it is JSON."""
    asked: dict[str, tuple[str, dict[str, Any]]] = {}
    done = []
    for message in messages:
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except ValueError:
                arguments = {}
            asked[call.get("id", "")] = (function.get("name", ""), arguments)
        if message.get("role") == "tool":
            name, arguments = asked.get(message.get("tool_call_id", ""), ("", {}))
            content = data_of(text_of(message))  # the result, out of its data block
            try:
                result = json.loads(content)
            except ValueError:
                result = content
            done.append((name, arguments, result))
    return done


def signed(answer: str) -> str:
    """An answer with the demo's signature under it (once)."""
    answer = answer.rstrip()
    return answer if answer.endswith(SIGNATURE) else f"{answer}\n\n{SIGNATURE}"


def json_reply(value: Any) -> dict[str, Any]:
    return {"content": json.dumps(value)}


def call_reply(tool: str, arguments: dict[str, Any], reasoning: str = "") -> dict[str, Any]:
    """An answer that calls one tool, with the reasoning before it."""
    reply: dict[str, Any] = {"tool_calls": [{"name": tool, "arguments": arguments}]}
    if reasoning:
        reply["reasoning"] = reasoning
    return reply


def denied(result: Any) -> bool:
    return isinstance(result, dict) and "denied" in str(result.get("error", ""))


def summary(tool: str, arguments: dict[str, Any], result: Any) -> str:
    """What a step says after its call: the result in a sentence or two."""
    if isinstance(result, dict) and "error" in result:
        if denied(result):
            return f"A person denied the {tool} call, so it was not made."
        return f"The {tool} call failed: {result['error']}"
    if not isinstance(result, dict):
        return f"{tool}: {result}"
    if tool == "read_file":
        return f"{result.get('path')} says:\n\n{result.get('content', '')}"
    if tool == "write_file":
        return f"Wrote {result.get('bytes_written')} bytes to {result.get('path')}."
    if tool == "list_files":
        entries = [entry.get("path", "") for entry in result.get("entries") or []]
        if not entries:
            return "The workspace is empty."
        return f"The workspace holds {len(entries)}: {', '.join(entries)}."
    if tool == "http_get":
        body = " ".join(str(result.get("body", "")).split())
        clipped = body[:300] + ("…" if len(body) > 300 else "")
        return f"GET {result.get('url')} answered {result.get('status')}: {clipped}"
    return f"{tool}: {json.dumps(result)[:300]}"
