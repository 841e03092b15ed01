"""The scripted LLM's one script format, for both stand-ins: the HTTP server that speaks the
OpenAI wire protocol (llm_server.ScriptedLLMServer, for code in another process such as a Celery
worker) and the in-process provider (scripted_provider.ScriptedProvider, for the engine driven
in the test's own process). `Script` holds the matching; the builders below make the replies.

A script is a list of rules `{"match": str | [str, ...], "replies": [reply, ...], "repeat": bool}`.
A request matches a rule when every `match` string occurs in the text of its messages (all roles,
content only). The first matching rule with replies left gives its next reply; with
`"repeat": True` its last reply is kept and given again. Nothing left that matches: the server
answers 500 "no scripted reply", the provider raises AssertionError; both name the last message.
First match wins, so a specific rule goes before a general one ("AGENTDESK:STEP 0" before
"AGENTDESK:STEP"), and rules put in front of a script (`[rule, *SCRIPT]`) override its own for
their phase until their replies run out.

A reply may hold:
    content: str                 the answer text (a plan or verdict is JSON: plan_reply, verdict)
    tool_calls: [{"name": str, "arguments": dict | raw str, "id": str (optional)}]
    reasoning: str               the model's reasoning, before the content
    finish_reason: str           why the model stopped ("length": cut off by max_tokens)
    usage: {"prompt_tokens": int, "completion_tokens": int}   default DEFAULT_USAGE
    raise: CODE, message: str    the call fails with LLMError(CODE, message): how the provider
                                 fails in-process (llm_error builds it). The server, which cannot
                                 raise in another process, answers a 500 naming CODE; script
                                 `status` to choose how the wire fails.
Over HTTP only (the provider refuses them):
    chunks: [str, ...]           exact content pieces to stream instead of splitting `content`
    status: int, error: str, retry_after: seconds   an error answer instead, its body
                                 {"error": {"message": error, ...}}; "{authorization}" in
                                 `error` is replaced by the request's Authorization header
                                 ("Bearer <key>"), as a gateway that echoes its key answers
    meet: {"name": str, "parties": int, "timeout": seconds (30)}   wait until `parties`
                                 requests reached the meeting `name` (or the timeout), then
                                 answer: requests that can only overlap if they run at once
    hold: str                    wait until the test calls `release(name)` on the server (at
                                 most 60 s), then answer: a run held mid-step for as long as
                                 the test needs, however slow the machine
    delay: seconds               sleep before answering (timeouts)
    chunk_delay: seconds         sleep between streamed chunks
    before_chunk: {i: function}  call function (server's thread) just before content piece i
    drop: True                   close the connection without answering
    truncate: True               stop the stream after the content, without finish or [DONE]
    garbled: True                send a chunk that is not JSON
A reply may be a callable that returns a reply: in-process it takes the LLMRequest, to act in
the middle of a run (engage the kill switch, ask for a cancel) before answering; in the server
(scripted in-process, not over `POST /_script`) the request's JSON body, to compute the answer
from the request (the no-model demo, demo_script.py).
"""

import copy
import json
from typing import Any

DEFAULT_USAGE = {"prompt_tokens": 11, "completion_tokens": 7}
WIRE_ONLY = frozenset(
    ["chunks", "status", "error", "retry_after", "delay", "chunk_delay", "drop", "truncate"]
    + ["garbled", "reasoning_field", "meet", "hold", "before_chunk"]
)


def messages_text(messages: list[dict[str, Any]]) -> str:
    """The content of every message, joined: what rules match against."""
    parts = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(p.get("text", "") for p in content if isinstance(p, dict))
    return "\n".join(parts)


class Script:
    """A script's rules and how far each has been used. Not thread-safe: the server holds its
    own lock around it."""

    def __init__(self, rules: list[dict[str, Any]] = ()) -> None:
        for rule in rules:
            if not rule.get("replies"):
                raise ValueError(f"rule {rule!r} has no replies")
        self.rules = copy.deepcopy(list(rules))
        self.positions = [0] * len(self.rules)

    def reply_to(self, messages: list[dict[str, Any]]) -> Any:
        """The next reply (a copy) for a request with these messages, or None."""
        text = messages_text(messages)
        for number, rule in enumerate(self.rules):
            match = rule.get("match", "")
            needles = [match] if isinstance(match, str) else list(match)
            if not all(needle in text for needle in needles):
                continue
            replies, position = rule["replies"], self.positions[number]
            if position < len(replies):
                if position < len(replies) - 1 or not rule.get("repeat"):
                    self.positions[number] += 1
                return copy.deepcopy(replies[position])
        return None


def no_reply_message(messages: list[dict[str, Any]]) -> str:
    last = json.dumps((messages or [{}])[-1], ensure_ascii=False)[:2000]
    return f"no scripted reply for this request; last message: {last}"


# --- replies ----------------------------------------------------------------------------------


def json_reply(value: Any) -> dict[str, Any]:
    """An answer whose content is `value` as JSON (an analysis, a plan, a verdict)."""
    return {"content": json.dumps(value)}


def plan_reply(*steps: dict[str, Any]) -> dict[str, Any]:
    return json_reply({"steps": list(steps)})


def step(objective: str, tools=(), depends_on=()) -> dict[str, Any]:
    """One step of a plan_reply."""
    return {"objective": objective, "tool_names": list(tools), "depends_on": list(depends_on)}


def verdict(
    complete: bool = True, response: str = "done", replan: bool = False, evidence=()
) -> dict[str, Any]:
    """A verifier's answer; `evidence` the numbers of the tool calls it cites (1 = the run's
    first call)."""
    return json_reply(
        {
            "task_complete": complete,
            "reasoning": "scripted",
            "should_replan": replan,
            "response": response,
            "evidence": list(evidence),
        }
    )


def tool_call(name: str, **arguments: Any) -> dict[str, Any]:
    """An answer that calls one tool."""
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def llm_error(code: str, message: str = "scripted failure") -> dict[str, Any]:
    """The LLM call fails with LLMError(code) (in-process; see `raise` above)."""
    return {"raise": code, "message": message}


def asked(llm, marker: str) -> bool:
    """Whether the scripted LLM server has received a request containing `marker`."""
    return any(marker in json.dumps(body["messages"]) for body in llm.requests)
