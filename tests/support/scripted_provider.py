"""An in-process LLM for tests that drive the engine in the test's own process (no Celery): an
LLMProvider that answers from a script in the scripted server's format (script.py), so one
script reads the same whichever stand-in plays it. `requests` keeps every LLMRequest."""

import json

from agents_app.engine.jsonparse import extract_json_object
from agents_app.engine.llm import LLMError, LLMRequest, LLMResponse, ToolCallRequest, Usage
from tests.support.script import DEFAULT_USAGE, WIRE_ONLY, Script, no_reply_message


class ScriptedProvider:
    def __init__(self, rules: list[dict]):
        self.script = Script(rules)
        self.requests: list[LLMRequest] = []

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        reply = self.script.reply_to(request.messages)
        if reply is None:
            raise AssertionError(no_reply_message(request.messages))
        if callable(reply):
            reply = reply(request)
        if WIRE_ONLY & reply.keys():
            raise AssertionError(f"{sorted(WIRE_ONLY & reply.keys())}: only the server plays these")
        if "raise" in reply:
            raise LLMError(reply["raise"], reply.get("message", "scripted failure"))
        content, reasoning = reply.get("content") or "", reply.get("reasoning", "")
        if request.on_reasoning and reasoning:
            request.on_reasoning(reasoning)
        if request.on_token and content:
            request.on_token(content)
        return LLMResponse(
            content=content,
            tool_calls=[tool_call(i, call) for i, call in enumerate(reply.get("tool_calls", []))],
            reasoning=reasoning,
            usage=Usage(**{**DEFAULT_USAGE, **reply.get("usage", {})}),
            model="scripted",
            parsed=extract_json_object(content) if request.response_schema else None,
            finish_reason=reply.get(
                "finish_reason", "tool_calls" if reply.get("tool_calls") else "stop"
            ),
        )


def tool_call(index: int, call: dict) -> ToolCallRequest:
    arguments, error = call.get("arguments", {}), None
    if isinstance(arguments, str):  # raw, as a model may send it
        try:
            arguments = json.loads(arguments)
        except ValueError as exc:
            arguments, error = {}, f"tool arguments are not valid JSON ({exc})"
    return ToolCallRequest(
        id=call.get("id") or f"call_{index}",
        name=call["name"],
        arguments=arguments,
        arguments_error=error,
    )
