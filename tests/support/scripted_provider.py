"""An in-process LLM for engine unit tests: answers from a script, by phase marker."""

import json
from collections.abc import Callable
from typing import Any

from agents_app.engine.llm import LLMError, LLMRequest, LLMResponse, ToolCallRequest, Usage

Reply = dict[str, Any] | Callable[[LLMRequest], dict[str, Any]]


class ScriptedProvider:
    """`rules` maps a marker (AGENTDESK:PLAN, AGENTDESK:STEP 0, ...) to replies used in order;
    the last reply repeats. A reply is {"content"|"json"|"tool_calls"|"error"|"usage"} or a
    callable returning one."""

    def __init__(self, rules: dict[str, list[Reply]]):
        self.rules = {marker: list(replies) for marker, replies in rules.items()}
        self.requests: list[LLMRequest] = []

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        text = request.messages[0]["content"]
        marker = max((m for m in self.rules if m in text), key=len, default=None)
        if marker is None:
            raise AssertionError(f"no scripted reply for: {text[:120]}")
        replies = self.rules[marker]
        reply = replies.pop(0) if len(replies) > 1 else replies[0]
        if callable(reply):
            reply = reply(request)
        if "error" in reply:
            raise LLMError(reply["error"], reply.get("message", "scripted failure"))
        content = reply.get("content", "")
        if "json" in reply:
            content = json.dumps(reply["json"])
        if request.on_token and content:
            request.on_token(content)
        calls = [
            ToolCallRequest(id=f"call_{i}", name=c["name"], arguments=c.get("arguments", {}))
            for i, c in enumerate(reply.get("tool_calls", []))
        ]
        usage = Usage(**reply.get("usage", {"prompt_tokens": 10, "completion_tokens": 5}))
        parsed = reply.get("json") if request.response_schema else None
        return LLMResponse(
            content=content, tool_calls=calls, usage=usage, model="scripted", parsed=parsed
        )


def plan(*steps: dict[str, Any]) -> dict[str, Any]:
    return {"json": {"steps": list(steps)}}


def step(objective: str, tools: list[str] | None = None, depends_on: list[int] | None = None):
    return {"objective": objective, "tool_names": tools or [], "depends_on": depends_on or []}


def verdict(complete: bool = True, response: str = "done", replan: bool = False) -> dict[str, Any]:
    return {
        "json": {
            "task_complete": complete,
            "reasoning": "scripted verdict",
            "should_replan": replan,
            "response": response,
        }
    }
