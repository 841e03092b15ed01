"""The demo in a conversation: a chat answer and a contract agent's cycles and evaluation.

A chat answer does what the person's last message asks, one tool call a turn (a fetch waits for
a person's approval), with its reasoning before each call, then answers in Markdown from the
results. A contract agent does one thing of its contract a cycle and judges itself met once
each has a successful call, citing them.
"""

import re
from typing import Any

from agents_app.demo.reading import (
    SIGNATURE,
    call_reply,
    denied,
    json_reply,
    results_of,
    signed,
    summary,
    text_of,
)
from agents_app.demo.tasks import DEFAULT_CONTENT, Action, task_actions

# What a contract that names nothing the demo knows is worked as: look, then write it down.
CONTRACT_NOTES = "contract-notes.md"
_CALL_LINE = re.compile(r"^\[#(\d+)\] (\S+) .*? → (ok|failed): (.*)$", re.MULTILINE)

HELP = """I am **AgentDesk's scripted demo**, not a model: I act on the words of your message.
Try one of these:

| Say | What you see |
|---|---|
| `Fetch https://example.com/` | my reasoning, then an `http_get` call that waits for your approval |
| `List the files` | a `list_files` call, then what the workspace holds |
| `Write hello to notes.md, then read notes.md` | two calls, then what the file says |

Connect a real model to talk about anything else (README: *Connect an LLM*)."""


def offered_tools(request: Any) -> list[str]:
    """The names of the tools the request offers (a body's `tools`, an LLMRequest's)."""
    tools = request.get("tools") if isinstance(request, dict) else getattr(request, "tools", None)
    names = []
    for tool in tools or []:
        if isinstance(tool, dict):
            names.append(str((tool.get("function") or tool).get("name") or ""))
        else:
            names.append(str(getattr(tool, "name", "")))
    return [name for name in names if name]


def _offered(tool: str, offered: list[str]) -> str:
    """The offered name of a tool (an exact name, or one namespaced as `server.tool`)."""
    for name in offered:
        if name == tool or name.endswith(f".{tool}") or name.endswith(f"__{tool}"):
            return name
    return ""


def _last_person_message(messages: list[dict[str, Any]]) -> int:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user":
            return index
    return 0


def _next_call(
    actions: list[Action], done: list[tuple[str, dict[str, Any], Any]], offered: list[str]
) -> tuple[str, dict[str, Any]] | None:
    """The call of the first action not done yet, as offered; a write without content writes
    what the last result said."""
    if len(done) >= len(actions):
        return None
    action = actions[len(done)]
    name = _offered(action.tool, offered)
    if not name:
        return None
    arguments = action.arguments
    if action.tool == "write_file" and not action.content and done:
        arguments = {**arguments, "content": summary(*done[-1]) + "\n"}
    return name, arguments


def chat_reply(request: Any, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A chat answer's next turn: the next call the person's message asks for, or the answer."""
    start = _last_person_message(messages)
    asked = text_of(messages[start])
    offered = offered_tools(request)
    actions = [a for a in task_actions(asked) if a.tool and _offered(a.tool, offered)]
    done = results_of(messages[start + 1 :])
    if not actions:
        return {
            "reasoning": "Nothing in the message asks for a tool I know; I say what I can do.",
            "content": f"{HELP}\n\n{SIGNATURE}",
        }
    if done and denied(done[-1][2]):
        return {
            "reasoning": "A person denied the call, so I do not ask again; I say so.",
            "content": signed(
                f"A person denied the `{done[-1][0]}` call, so I did not make it. "
                "Ask again if you change your mind."
            ),
        }
    following = _next_call(actions, done, offered)
    if following is not None:
        name, arguments = following
        why = f"You asked: “{asked.strip()[:200]}”. I call `{name}` for that"
        if len(actions) > 1:
            why += f" ({len(done) + 1} of {len(actions)})"
        return call_reply(name, arguments, why + ".")
    lines = [f"{number}. `{tool}`: {summary(tool, args, result)}"
             for number, (tool, args, result) in enumerate(done, 1)]  # fmt: skip
    return {
        "reasoning": "Every call is made; I put their results together.",
        "content": signed("**What I did**\n\n" + "\n".join(lines)),
    }


# --- contract agents ------------------------------------------------------------------------


def contract_of(messages: list[dict[str, Any]]) -> str:
    system = text_of(messages[0]) if messages else ""
    return system.split("\nContract:\n", 1)[-1].strip()


def contract_actions(contract: str) -> list[Action]:
    """What the contract asks for; one that names nothing the demo knows: look at the
    workspace, then write what was found to CONTRACT_NOTES."""
    return task_actions(contract) or [Action("list_files"), Action("write_file", CONTRACT_NOTES)]


def contract_cycle_reply(request: Any, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """One cycle: the next thing of the contract not done yet, or a word that all is done."""
    actions = contract_actions(contract_of(messages))
    done = [r for r in results_of(messages) if not _failed(r[2])]
    offered = offered_tools(request) or [a.tool for a in actions]
    following = _next_call(actions, done, offered)
    if following is None:
        return {"content": signed("Every part of the contract is done.")}
    name, arguments = following
    if name.endswith("write_file") and not arguments.get("content"):
        arguments = {**arguments, "content": DEFAULT_CONTENT}
    return {
        **call_reply(name, arguments, f"Cycle {len(done) + 1}: next, `{name}`."),
        "content": f"Cycle {len(done) + 1} of {len(actions)}: I call `{name}`.",
    }


def _failed(result: Any) -> bool:
    return isinstance(result, dict) and "error" in result


def contract_evaluation_reply(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Met once every action of the contract has a successful call, citing those calls."""
    actions = contract_actions(contract_of(messages))
    question = text_of(messages[-1]) if messages else ""
    good = [
        (int(n), tool) for n, tool, outcome, _ in _CALL_LINE.findall(question) if outcome == "ok"
    ]
    needed = [a.tool for a in actions]
    cited, missing = [], []
    for tool in needed:
        numbers = [n for n, name in good if name.endswith(tool) and n not in cited]
        if numbers:
            cited.append(numbers[0])
        else:
            missing.append(tool)
    if missing:
        return json_reply(
            {
                "met": False,
                "reason": f"{len(cited)} of {len(needed)} parts done; still to do: "
                + ", ".join(missing),
                "evidence": [],
            }
        )
    return json_reply(
        {
            "met": True,
            "reason": signed(
                "The contract is met: "
                + ", ".join(f"#{n} {tool}" for n, tool in zip(cited, needed, strict=True))
                + " succeeded."
            ),
            "evidence": cited,
        }
    )
