"""One request, one reply: the phase the engine's marker names decides who answers."""

from typing import Any

from agents_app.demo.conversations import (
    chat_reply,
    contract_cycle_reply,
    contract_evaluation_reply,
)
from agents_app.demo.reading import SIGNATURE, json_reply, messages_of, phase_of, task_of, text_of
from agents_app.demo.tasks import (
    DEMO_NOTE,
    analysis_reply,
    direct_reply,
    plan_reply,
    step_reply,
    verdict_reply,
)
from agents_app.demo.team import decomposition_reply

CONDENSED = "The person asked the scripted demo for a few things; each was answered (DONE)."


def demo_reply(request: Any) -> dict[str, Any]:
    """The demo's answer to one chat-completion request (a body, or an in-process LLMRequest),
    in the script format (agents_app.demo.wire)."""
    messages = messages_of(request)
    phase = phase_of(messages)
    task = task_of(messages)
    if phase == "ANALYZE":
        return json_reply(analysis_reply(task))
    if phase == "PLAN":
        return plan_reply(task, messages)
    if phase == "STEP":
        return step_reply(task, messages)
    if phase == "DIRECT":
        return direct_reply(task, messages)
    if phase == "VERIFY":
        can_replan = "set should_replan" in text_of(messages[0])
        return json_reply(verdict_reply(task, text_of(messages[-1]), can_replan=can_replan))
    if phase == "TEAM":
        return decomposition_reply(task, messages)
    if phase == "CHAT":
        return chat_reply(request, messages)
    if phase == "CONTRACT":
        last = text_of(messages[-1]) if messages else ""
        if "AGENTDESK:EVALUATE" in last:
            return contract_evaluation_reply(messages)
        return contract_cycle_reply(request, messages)
    if phase == "CONDENSE":
        return {"content": CONDENSED}
    return {"content": f"{DEMO_NOTE}\n\n{SIGNATURE}"}


# The demo as a script of the tests' scripted server: one rule, every request answered by
# demo_reply.
DEMO_SCRIPT: list[dict[str, Any]] = [{"match": "", "repeat": True, "replies": [demo_reply]}]
