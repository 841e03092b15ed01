"""The demo's task phases (analysis, plan, step, direct step, verdict), for a task, a team's
child and a micro agent alike.

Rules of a script match fixed strings, so a fixed script can only do one thing whatever the
task says. The demo is one rule whose reply is computed from the request (`demo_reply`): it
reads the phase from the engine's marker (AGENTDESK:ANALYZE, PLAN, STEP n, DIRECT, VERIFY),
the task from the prompt, and what happened so far from the conversation (tool results, the
verifier's report, a replan's history). It keeps nothing between requests, so any number of
runs can use one server side by side.

By keywords in the task (`task_actions`):
    "fail" / "replan"         the first plan reads a file that is not there; the verifier asks for
                              a replan; the second plan writes the file, then reads it
    an http(s) URL / "fetch"  http_get it (a person is asked first), then summarise the answer
    "list ... files"          list_files
    "read X", "what does X say", "show X"   read_file X, answer with what it holds
    "write/save/create X (containing ...)"  write_file X (the files the engine itself finds the
                              task asking for, engine.evidence.files_to_write)
    anything else             look at the workspace (list_files), then answer in prose
"""

import json
import re
from dataclasses import dataclass
from typing import Any

from agents_app.demo.reading import (
    FINISH,
    call_reply,
    results_of,
    signed,
    summary,
    text_of,
)
from agents_app.engine.evidence import files_named, files_to_write
from agents_app.engine.untrusted import data_of

# The file the replan demo's first plan reads before anything wrote it.
REPLAN_FILE = "draft.md"
REPLAN_CONTENT = "# Draft\n\nWritten by the second plan, after the first one failed.\n"
# The prose step planned after a person denied the call the task needs (on the fast path).
DENIED = "denied"
DENIED_OBJECTIVE = "Tell the user that a person denied the call the task needs"
DEFAULT_URL = "https://example.com/"
DEFAULT_CONTENT = "Written by the AgentDesk demo script.\n"
DEMO_NOTE = (
    "This is AgentDesk's demo script, not a model: it can read, write and list files, fetch a "
    "URL and show a replan (see the README's no-model demo)."
)

_URL = re.compile(r"\bhttps?://[^\s<>\"'`]+", re.IGNORECASE)
_REPLAN = re.compile(r"\b(fail|fails|failing|failure|replan|replans|replanning)\b", re.IGNORECASE)
_FETCH = re.compile(r"\b(fetch|download|get the page)\b", re.IGNORECASE)
_LIST = re.compile(r"\b(list|show|what)\b[^.?!]*\bfiles\b|\bls\b", re.IGNORECASE)
_READ = re.compile(
    r"\b(read|open|show|cat|print|summari[sz]e|what does|what's in|what is in|contents? of)\b",
    re.IGNORECASE,
)
# What a write holds: "... notes.txt containing hello", "with the text: hi", "saying hi".
_CONTENT_AFTER = re.compile(
    r"\b(?:containing|that contains|with the (?:text|content|contents|words?)|with content|"
    r"saying|that says|with)\s*:?\s*(?P<content>.+)$",
    re.IGNORECASE | re.DOTALL,
)
# Where the content ends: "..., then read it", the end of a sentence.
_CONTENT_END = re.compile(r",?\s+(?:and\s+)?then\b|[.!?](?:\s|$)", re.IGNORECASE)
# "Write hello to hello.txt": what stands between the verb and "to <file>".
_CONTENT_BEFORE = re.compile(
    r"\b(?:write|save|put|store|append)\s+(?P<content>.+?)\s+(?:to|into|in|as)\s+"
    r"(?:a |the |new |file |called |named )*$",
    re.IGNORECASE | re.DOTALL,
)
_CAPABILITIES = {
    "list_files": "FILE_LIST",
    "read_file": "FILE_READ",
    "write_file": "FILE_WRITE",
    "http_get": "HTTP_GET",
}
_DOMAINS = {"http_get": "web"}
# The actions that need no other's result.
_INDEPENDENT = frozenset({"list_files", "read_file", "http_get"})


@dataclass(frozen=True)
class Action:
    """One thing the task asks for: a tool and what it acts on ("" for an answer in prose)."""

    tool: str
    target: str = ""
    content: str = ""

    @property
    def objective(self) -> str:
        # The step's objective; `step_action` reads the action back from it.
        if self.tool == "list_files":
            return "List the files in the workspace"
        if self.tool == "read_file":
            return f"Read {self.target} and answer with what it says"
        if self.tool == "http_get":
            return f"Fetch {self.target} and summarise what it returns"
        if self.tool == "write_file":
            return f"Write {self.target}"
        if self.target == DENIED:
            return DENIED_OBJECTIVE
        return "Answer the task in prose from what the earlier step found"

    @property
    def arguments(self) -> dict[str, Any]:
        if self.tool == "list_files":
            return {}
        if self.tool == "http_get":
            return {"url": self.target}
        if self.tool == "write_file":
            return {"path": self.target, "content": self.content or DEFAULT_CONTENT}
        return {"path": self.target}


# --- what the task asks for ---------------------------------------------------------------------


def is_replan_demo(task: str) -> bool:
    return bool(_REPLAN.search(task))


def task_actions(task: str) -> list[Action]:
    """The actions the task asks for, in the order the task names them. An empty list:
    nothing the demo recognises (it answers in prose)."""
    if is_replan_demo(task):
        return [Action("write_file", REPLAN_FILE, REPLAN_CONTENT), Action("read_file", REPLAN_FILE)]
    writes = files_to_write(task)
    found: list[tuple[int, Action]] = []
    listing = _LIST.search(task)
    if listing:
        found.append((listing.start(), Action("list_files")))
    if _READ.search(task):
        for name in files_named(task):
            first, last = task.find(name), task.rfind(name)
            if name not in writes:
                found.append((first, Action("read_file", name)))
            elif last != first and _READ.search(task[first:last]):
                # "Create a.md containing hi, then read a.md": read what was written.
                found.append((last, Action("read_file", name)))
    fetch = _FETCH.search(task)
    urls = [url.rstrip(".,;:!?)]}") for url in _URL.findall(task)]
    if not urls and fetch:
        found.append((fetch.start(), Action("http_get", DEFAULT_URL)))
    found += [(task.find(url), Action("http_get", url)) for url in dict.fromkeys(urls)]
    for name in writes:
        at = task.find(name)
        # Content from before the file ("write hello to x.txt") only when nothing comes first
        # whose result is what to write ("read a.txt and save it to b.txt").
        alone = not any(position < at for position, _ in found)
        found.append((at, Action("write_file", name, _content_for(task, name, before=alone))))
    return [action for _, action in sorted(found, key=lambda pair: pair[0])]


def _content_for(task: str, name: str, *, before: bool = True) -> str:
    """What the task says to write into `name`; "" when it does not say (the step then writes
    what the earlier steps found, or a line of its own)."""
    at = task.find(name)
    after = _CONTENT_AFTER.search(task[at + len(name) :]) if at >= 0 else None
    before = _CONTENT_BEFORE.search(task[:at]) if at >= 0 and before else None
    found = after or before
    if found is None:
        return ""
    content = _CONTENT_END.split(found.group("content"), maxsplit=1)[0]
    content = content.strip().rstrip(".").strip()
    return content[1:-1] if len(content) > 1 and content[0] == content[-1] in "\"'`" else content


# --- the phases -------------------------------------------------------------------------------


def analysis_reply(task: str) -> dict[str, Any]:
    tools = [action.tool for action in task_actions(task)] or ["list_files"]
    return {
        "capabilities": sorted({_CAPABILITIES[tool] for tool in tools if tool in _CAPABILITIES}),
        "domain": _DOMAINS.get(tools[0], "file_operations"),
    }


def plan_reply(task: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    prompt = "\n".join(text_of(m) for m in messages)
    offered = set(re.findall(r"^- ([\w.-]+): ", prompt, re.MULTILINE))
    found = re.search(r"at most (\d+) concrete steps", prompt)
    max_steps = int(found.group(1)) if found else 10
    history = "A previous plan did not complete the task" in prompt
    if is_replan_demo(task) and not history:
        reasoning = (
            f"First read {REPLAN_FILE}. (The demo's first plan fails on purpose: nothing has "
            "written that file yet, so the verifier asks for a replan.)"
        )
        steps = [Action("read_file", REPLAN_FILE)]
    elif history and "person denied" in prompt.lower():
        reasoning = "A person denied the call the task needs; say so instead of asking again."
        steps = [Action("", DENIED)]
    else:
        steps = [a for a in task_actions(task) if a.tool in offered]
        if is_replan_demo(task):
            reasoning = (
                f"The first plan failed: {REPLAN_FILE} did not exist. Write it, then read it."
            )
        elif steps:
            reasoning = "One step per thing the task asks for: " + ", ".join(a.tool for a in steps)
        else:
            reasoning = "Nothing here needs a tool but a look at the workspace; then answer."
            steps = [Action("list_files"), Action("")] if "list_files" in offered else [Action("")]
    steps = steps[:max_steps]
    # Looks, reads and fetches need nothing of each other: they run side by side. A write (it
    # may write what came before) or an answer in prose (it says what came before) waits.
    side_by_side = len(steps) > 1 and all(a.tool in _INDEPENDENT for a in steps)
    plan = {
        "steps": [
            {
                "objective": action.objective,
                "tool_names": [action.tool] if action.tool else [],
                "reasoning": "",
                "depends_on": [] if side_by_side or not index else [index - 1],
            }
            for index, action in enumerate(steps)
        ],
        "parallel": side_by_side,
    }
    if side_by_side:
        reasoning += " They need nothing of each other, so they run side by side."
    return {"reasoning": reasoning, "content": json.dumps(plan)}


def step_action(objective: str, task: str) -> Action:
    """The action a step's objective (as `Action.objective` wrote it) asks for."""
    if objective.startswith(DENIED_OBJECTIVE):
        return Action("", DENIED)
    if objective.startswith("List the files"):
        return Action("list_files")
    for tool, verb in (("read_file", "Read"), ("http_get", "Fetch"), ("write_file", "Write")):
        found = re.match(rf"{verb} (\S+)", objective)
        if found:
            # The task's own action, with the content it gives (none: what was found).
            known = [a for a in task_actions(task) if (a.tool, a.target) == (tool, found[1])]
            return known[0] if known else Action(tool, found[1])
    return Action("")


def step_reply(task: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    request = text_of(messages[1]) if len(messages) > 1 else ""
    # The step's own line comes after the earlier steps' outputs.
    own = re.findall(r"^Step \d+: (.*)$", request, re.MULTILINE)
    objective = own[-1] if own else request.split("\n", 1)[0].split(": ", 1)[-1]
    action = step_action(objective, task)
    results = results_of(messages)
    if results:
        return {"content": summary(*results[-1])}
    if action.target == DENIED:
        return {"content": "A person denied the call this task needs, so it was not made."}
    if not action.tool:
        return {"content": _prose(task, request)}
    if action.tool == "write_file" and not action.content:
        earlier = _earlier_outputs(request)
        action = Action("write_file", action.target, _written(earlier[-1]) if earlier else "")
    objective = action.objective
    return call_reply(
        action.tool, action.arguments, f"I will {objective[0].lower()}{objective[1:]}."
    )


def direct_reply(task: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The fast path: every action of the task in turn in the one step, then finish_task."""
    actions = task_actions(task)
    if is_replan_demo(task):
        actions = [Action("read_file", REPLAN_FILE)]  # fails: the planner takes over
    actions = actions or [Action("list_files")]
    results = [r for r in results_of(messages) if r[0] != FINISH]
    if len(results) < len(actions):
        action = actions[len(results)]
        if action.tool == "write_file" and not action.content and results:
            action = Action("write_file", action.target, _written(summary(*results[-1])))
        return call_reply(action.tool, action.arguments)
    summaries = [summary(*result) for result in results]
    # A failed or denied call (shown to correct, AGENT_TOOL_ERROR_RETRIES) is no success.
    failed = any(isinstance(result, dict) and "error" in result for _, _, result in results)
    answer = "\n\n".join(summaries)
    if not task_actions(task):
        answer = f"{answer}\n\n{DEMO_NOTE}"
    arguments: dict[str, Any] = {"result": signed(answer)}
    if failed:
        arguments["success"] = False
    return {"tool_calls": [{"name": FINISH, "arguments": arguments}]}


def verdict_reply(task: str, report: str, *, can_replan: bool) -> dict[str, Any]:
    """Complete when every step of the plan completed and each tool the task needs has a
    successful call; the evidence cites those calls by number."""
    steps = re.findall(r"^Step (\d+) \((\w+)\): (.*)$", report, re.MULTILINE)
    outputs = re.findall(r"\nOutput: (.*?)\nTool calls", "\n" + report, re.DOTALL)
    calls = re.findall(r"^  \[#(\d+)\] (\S+) .*? → (ok|failed): (.*)$", report, re.MULTILINE)
    good = [(int(number), tool) for number, tool, outcome, _ in calls if outcome == "ok"]
    citable = [number for number, tool in good if tool != FINISH]
    needed = {action.tool for action in task_actions(task)}
    unfinished = [(index, status, goal) for index, status, goal in steps if status != "completed"]
    lacking = sorted(needed - {tool for _, tool in good})
    if not unfinished and not lacking and steps:
        shown = ", ".join(f"#{number} {tool}" for number, tool in good if tool != FINISH)
        return {
            "task_complete": True,
            "reasoning": f"Every step completed; the tool calls show it: {shown or 'none needed'}.",
            "should_replan": False,
            "response": signed((outputs[-1].strip() if outputs else "") or "Done."),
            "evidence": citable,
        }
    if unfinished:
        index, status, goal = unfinished[0]
        failed = [text for _, _, outcome, text in calls if outcome == "failed"]
        why = f"Step {index} ({goal}) ended {status}" + (f": {failed[-1]}" if failed else "")
    else:
        why = f"No successful call of {', '.join(lacking)}, which the task needs"
    if any("denied" in text for _, _, _, text in calls):
        why += ". A person denied the call, so it was not made"
    replan = can_replan and is_replan_demo(task)
    return {
        "task_complete": False,
        "reasoning": why
        + (". A plan that writes the file first can finish it." if replan else "."),
        "should_replan": replan,
        "response": "",
        "evidence": [],
    }


# --- answers in prose -------------------------------------------------------------------------


def _earlier_outputs(request: str) -> list[str]:
    """The outputs of the earlier steps, from a step's request (its user message)."""
    found = re.search(
        r"^Earlier steps:\n(?:\(.*\)\n)?(<untrusted-.*?>\n.*?\n</untrusted-\w+>)",
        request,
        re.DOTALL | re.MULTILINE,
    )
    shown = data_of(found.group(1)) if found else ""
    return [
        output.strip()
        for output in re.findall(r"\nOutput: (.*?)(?=\nStep \d+ \(|\Z)", shown, re.DOTALL)
    ]


def _written(said: str) -> str:
    """What to write from an earlier result: a file's content as it was, else what was said."""
    found = re.match(r"\S+ says:\n\n(.*)\Z", said, re.DOTALL)
    return found.group(1) if found else said + "\n"


def _prose(task: str, request: str) -> str:
    earlier = _earlier_outputs(request)
    found = f" The earlier step found: {earlier[-1]}" if earlier else ""
    return f"You asked: {task!r}.{found} {DEMO_NOTE}"
