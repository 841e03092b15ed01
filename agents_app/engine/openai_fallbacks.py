"""Fallbacks for an OpenAI-compatible server that lacks a feature: the features a call uses, how a
400 degrades them, and the prompt-based stand-ins (tools described in the system prompt and
answered in JSON, the conversation rewritten without the `tool` role)."""

import json
import uuid
from dataclasses import dataclass, replace
from typing import Any

from agents_app.engine.jsonparse import extract_json_object
from agents_app.engine.llm import LLMRequest, ToolCallRequest, ToolSchema
from agents_app.engine.openai_stream import _parse_arguments

FORMAT_MODES = ("json_schema", "json_object", "prompt")


@dataclass(frozen=True)
class _Features:
    """What a call sends. Each 400 degrades one of them; a success is remembered per endpoint."""

    stream_options: bool = True
    native_tools: bool = True
    format_mode: str = "json_schema"


# --- prompting instead of native features ---------------------------------------------------


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
