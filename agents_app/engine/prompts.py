"""Prompts for each phase. The markers (AGENTDESK:PLAN ...) let a scripted test LLM tell phases apart."""

import json
from typing import Any

from agents_app.engine.evidence import CallRecord
from agents_app.engine.plan_edits import PlanEdit, edit_notice
from agents_app.engine.untrusted import DATA_RULE, as_data
from tools_app.registry import ToolSpec

CONTEXT_CHARS = 8_000
OUTPUT_CHARS = 4_000
# The earlier steps a step's prompt shows: those it depends on, and the last EARLIER_STEPS
# before it. A long plan's prompt (and what building it costs) stays the same size at step 500
# as at step 20; what the others produced reaches a step through its dependencies, the run's
# files, and the verifier, which reads every step.
EARLIER_STEPS = 20


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more characters]"


def _context_block(context: dict[str, Any]) -> str:
    """The task's context, as data: a child's holds what other runs found (its siblings'
    results, the team's shared context)."""
    if not context:
        return ""
    text = _clip(json.dumps(context, ensure_ascii=False), CONTEXT_CHARS)
    return "\n\nContext (JSON):\n" + as_data(text, "context")


def tool_catalog(tools: list[ToolSpec]) -> str:
    if not tools:
        return "(no tools available)"
    return "\n".join(
        f"- {t.name}: {t.description} [capabilities: {', '.join(sorted(t.capabilities))}]"
        for t in tools
    )


def plan_messages(
    *, task: str, context: dict[str, Any], tools: list[ToolSpec], max_steps: int, history: str
) -> list[dict[str, Any]]:
    system = (
        "AGENTDESK:PLAN\nYou are the planner of an autonomous agent. Break the user's task into "
        f"at most {max_steps} concrete steps, in the order they must run. Each step names the tools "
        "it must use (only names from the tool list; an empty list for pure reasoning) and may "
        'depend on earlier steps by their 0-based index. Say "parallel": true when every step\'s '
        "depends_on lists all the steps whose results it needs: steps that need nothing "
        "unfinished then run at the same time. The last step should call finish_task "
        f"with the final answer when that tool is available. {DATA_RULE}"
        '\n\nAnswer with JSON only: {"steps": [{"objective": str, "tool_names": [str], '
        '"reasoning": str, "depends_on": [int]}], "parallel": bool}'
    )
    # The tools' descriptions are an MCP server's words for its tools: data, not the system's.
    user = f"Task: {task}{_context_block(context)}\n\nTools:\n" + as_data(
        tool_catalog(tools), "tool list"
    )
    if history:
        # What the earlier plan's steps said is data; the worker wraps it (worker.steps).
        user += "\n\nA previous plan did not complete the task. What happened:\n" + history
        user += "\n\nMake a new plan that finishes the task, reusing what already succeeded."
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def step_messages(
    *,
    task: str,
    context: dict[str, Any],
    index: int,
    total: int,
    objective: str,
    reasoning: str,
    earlier: list[tuple[int, str, str, str]],
    unshown: int = 0,
    instruction: str = "",
) -> list[dict[str, Any]]:
    """`earlier`: the steps before this one it is shown (`shown_earlier`), `unshown` of them
    left out; `instruction`: the person's, added when they forked the run."""
    # Steps are numbered from 1 here as on every page (the marker keeps the plan's index).
    done = "\n".join(
        f"Step {i + 1} ({status}): {obj}\nOutput: {_clip(out, OUTPUT_CHARS)}"
        for i, obj, status, out in earlier
    )
    system = (
        f"AGENTDESK:STEP {index}\nYou are executing step {index + 1} of {total} of a plan for the task "
        "below. Do the step's work with the offered tools, then answer with a short plain-text summary of "
        "what this step produced; that text is the step's output. Files live in the run's "
        "workspace; use paths relative to it. If this step completes the whole task, call "
        f"finish_task with the final answer. {DATA_RULE}\n\nTask: {task}"
    ) + _instruction_block(instruction)
    # What earlier steps produced holds what their tools returned: data, in the user message,
    # before the step's own line (which comes last, where a small model looks for its order).
    user = _context_block(context).lstrip("\n")
    if done:
        heading = "Earlier steps:\n"
        if unshown:
            heading += (
                f"({unshown} of the steps before this one not shown: it does not depend on them)\n"
            )
        user += ("\n\n" if user else "") + heading + as_data(done, "earlier steps")
    user += ("\n\n" if user else "") + f"Step {index + 1}: {objective}"
    if reasoning:
        user += f"\nWhy: {reasoning}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _instruction_block(instruction: str) -> str:
    """A person's instruction for the rest of the run (a fork's): theirs, so in the system
    message, after the task."""
    if not instruction.strip():
        return ""
    return f"\n\nThe person's instruction for this step and every later one: {instruction.strip()}"


def direct_messages(
    *, task: str, context: dict[str, Any], instruction: str = ""
) -> list[dict[str, Any]]:
    """The fast path's one step: a few lines, so a small model has little to misread."""
    system = (
        "AGENTDESK:DIRECT\nDo the user's task with the tools. File paths are relative to the "
        f"workspace. When done, call finish_task with the final answer. {DATA_RULE}"
    ) + _instruction_block(instruction)
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": f"Task: {task}{_context_block(context)}"},
    ]


def chat_system(instructions: str = "") -> dict[str, Any]:
    """A conversation's system message: the person's standing instructions follow it."""
    content = (
        "AGENTDESK:CHAT\nYou are a helpful assistant in a conversation. Use the tools when "
        "they help; file paths are relative to the conversation's workspace. Answer in "
        f"Markdown. {DATA_RULE}"
    )
    if instructions.strip():
        content += f"\n\nThe person's standing instructions:\n{instructions.strip()}"
    return {"role": "system", "content": content}


def evidence_nudge(tools: list[str], *, missing: list[str] = ()) -> dict[str, Any]:
    """Said once to a step that answered without using the tools it must use, or without
    writing the files its task asks for."""
    if missing:
        content = f"Not done yet: {', '.join(missing)} does not exist. Write it now."
    else:
        content = f"This step must use one of its tools ({', '.join(tools)}); call one now."
    return {"role": "user", "content": content}


ARGUMENTS_CHARS = 200
RESULT_CHARS = 300


def _call_line(call: CallRecord) -> str:
    arguments = _clip(json.dumps(call.arguments, ensure_ascii=False), ARGUMENTS_CHARS)
    outcome = "ok" if call.ok else "failed"
    return f"  [#{call.number}] {call.tool} {arguments} → {outcome}: {_clip(call.result, RESULT_CHARS)}"


def verify_messages(
    *,
    task: str,
    context: dict[str, Any],
    steps: list[tuple[int, str, str, str]],
    can_replan: bool,
    calls: list[CallRecord] = (),
    edit: PlanEdit | None = None,
) -> list[dict[str, Any]]:
    """`calls` are the run's tool calls, shown under their steps (an earlier plan's apart).
    `edit`: the plan a person edited, whose steps are then the task judged (engine.plan_edits)."""
    lines = []
    for i, obj, status, out in steps:
        # Numbered from 1, as the pages number them: what the verifier says of "Step 2"
        # is the step a person sees as 2.
        lines.append(f"Step {i + 1} ({status}): {obj}\nOutput: {_clip(out, OUTPUT_CHARS)}")
        own = [_call_line(c) for c in calls if c.step_index == i]
        lines.append("Tool calls:\n" + "\n".join(own) if own else "Tool calls: none")
    earlier = [_call_line(c) for c in calls if c.step_index is None]
    if earlier:
        lines.append("Tool calls of earlier plans:\n" + "\n".join(earlier))
    report = "\n".join(lines)
    replan = (
        "If it is not complete and a different plan could complete it, set should_replan."
        if can_replan
        else "No more replans are possible: judge what was done."
    )
    system = (
        "AGENTDESK:VERIFY\nYou are the verifier of an autonomous agent. Judge whether the steps "
        "below completed the user's task, from their tool calls' results, not from what the "
        f"steps claim. {replan} When complete, cite in `evidence` the numbers of the successful "
        "tool calls that show it, and write the final answer for the user in `response`. "
        f"{DATA_RULE}"
        "\n\nAnswer with JSON only: "
        '{"task_complete": bool, "reasoning": str, "should_replan": bool, "response": str, '
        '"evidence": [int]}'
    )
    asked = edit.task if edit else task
    # The steps' outputs and their calls' results are what tools and other runs returned.
    done = as_data(report, "steps and tool calls") if report else "(nothing)"
    user = f"Task: {asked}{_context_block(context)}\n\nWhat was done:\n{done}"
    if edit:
        user += f"\n\n{edit_notice(edit, task)}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def invalid_output_message(error: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": f"Your answer was not valid: {error}\nAnswer again with corrected JSON only.",
    }


def cut_off_message(max_tokens: int | None) -> dict[str, Any]:
    return {
        "role": "user",
        "content": f"Your last answer went past the {max_tokens}-token limit and was cut off. "
        "Answer again, much shorter: brief texts, nothing repeated.",
    }


def shown_earlier(index: int, depends_on: list[int]) -> list[int]:
    """The indexes of the earlier steps step `index` is shown, in order: every step it depends
    on and the last EARLIER_STEPS before it."""
    start = max(0, index - EARLIER_STEPS)
    return sorted({d for d in depends_on if 0 <= d < start}) + list(range(start, index))
