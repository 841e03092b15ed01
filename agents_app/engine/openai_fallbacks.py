"""Fallbacks for an OpenAI-compatible server that lacks a feature: the features a call uses, how a
400 degrades them, and the prompt-based stand-ins (tools described in the system prompt and
answered in JSON, the conversation rewritten without the `tool` role)."""

import json
import re
import uuid
from dataclasses import dataclass, replace
from typing import Any

from agents_app.engine.jsonparse import extract_json_object, without_prose
from agents_app.engine.llm import LLMRequest, ToolCallRequest, ToolSchema
from agents_app.engine.openai_stream import _parse_arguments

FORMAT_MODES = ("json_schema", "json_object", "prompt")


@dataclass(frozen=True)
class _Features:
    """What a call sends. Each 400 degrades one of them; a success is remembered per endpoint."""

    stream_options: bool = True
    native_tools: bool = True
    format_mode: str = "json_schema"
    # tool_choice "required" on the first turn of a step that must call a tool
    tool_choice: bool = True
    # OpenAI's newer models take only max_completion_tokens; most other servers only max_tokens.
    max_tokens_field: str = "max_tokens"


def _format_needed(request: LLMRequest, features: _Features) -> bool:
    """Whether the call asks for JSON through response_format: a schema of its own, or the
    answer to tools described in the prompt."""
    return request.response_schema is not None or (
        bool(request.tools) and not features.native_tools
    )


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


def _tools_instructions(tools: list[ToolSchema], *, required: bool = False) -> str:
    """Short on purpose: small models copy what they read. The argument schemas go to the
    server's grammar (_tools_answer_schema), not into the prompt."""
    lines = ["Tools:"]
    lines += [f"- {_signature(tool)}: {_first_sentence(tool.description)}" for tool in tools]
    lines.append(
        '\nAnswer with one JSON object only. To call a tool: {"tool": NAME, "arguments": {...}}'
    )
    if not required:
        lines.append('When you are done: {"final": ANSWER}')
    return "\n".join(lines)


def _first_sentence(text: str) -> str:
    match = re.match(r"(.+?[.!?])(\s|$)", text.strip(), re.DOTALL)
    return " ".join((match.group(1) if match else text).split())


def _signature(tool: ToolSchema) -> str:
    properties = tool.parameters.get("properties") or {}
    required = set(tool.parameters.get("required") or [])
    names = [name if name in required else f"{name}?" for name in properties]
    return f"{tool.name}({', '.join(names)})"


def _tools_answer_schema(tools: list[ToolSchema], *, final: bool) -> dict[str, Any]:
    """One branch per tool (its name as a constant, its arguments' schema) and, unless a call is
    required, the final answer: what a grammar-constraining server lets the model write."""
    branches: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {
                "tool": {"const": tool.name},
                "arguments": without_prose(tool.parameters) or {"type": "object"},
            },
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        }
        for tool in tools
    ]
    if final:
        branches.append(
            {
                "type": "object",
                "properties": {"final": {"type": "string", "minLength": 1}},
                "required": ["final"],
                "additionalProperties": False,
            }
        )
    return {"anyOf": branches}


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
    if isinstance(found.get("tool"), str) and "tool_calls" not in found:
        found = {"tool_calls": [{"name": found["tool"], "arguments": found.get("arguments", {})}]}
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


def _sends_tool_choice(request: LLMRequest, features: _Features) -> bool:
    return (
        bool(request.tools)
        and request.tool_required
        and features.native_tools
        and features.tool_choice
    )


def _degrade_named(features: _Features, request: LLMRequest, message: str) -> _Features | None:
    """Drop the feature a 400 names, if it names one we sent."""
    text = message.lower()
    if features.stream_options and ("stream_options" in text or "include_usage" in text):
        return replace(features, stream_options=False)
    schema_words = ("response_format", "json_schema", "json_object", "grammar")
    if (
        _format_needed(request, features)
        and features.format_mode != "prompt"
        and any(word in text for word in schema_words)
    ):
        return _next_format(features)
    uses_max_tokens = request.max_tokens is not None and features.max_tokens_field == "max_tokens"
    if uses_max_tokens and "max_tokens" in text:
        return replace(features, max_tokens_field="max_completion_tokens")
    if _sends_tool_choice(request, features) and "tool_choice" in text:
        return replace(features, tool_choice=False)
    if request.tools and features.native_tools and ("tool" in text or "function" in text):
        return replace(features, native_tools=False)
    return None


def _degrade_guesses(features: _Features, request: LLMRequest) -> list[_Features]:
    """What to try, in turn, after a 400 that names nothing: each feature alone (the cheapest
    loss first), then all of them, so a vague 400 does not cost more than it has to."""
    guesses = []
    if features.stream_options:
        guesses.append(replace(features, stream_options=False))
    if _sends_tool_choice(request, features):
        guesses.append(replace(features, tool_choice=False))
    if _format_needed(request, features):
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
        format_mode="prompt" if _format_needed(request, features) else features.format_mode,
        tool_choice=features.tool_choice and not request.tool_required,
    )
    if everything != features and everything not in guesses:
        guesses.append(everything)
    return guesses
