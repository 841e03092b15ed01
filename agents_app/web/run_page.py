"""What the run page shows: progress, the plan and its steps, reasoning, the result, the
pending approval and the event log, read from the rows. The page renders it whole
(`run_page_context`); `fragments` re-renders single regions of it for the sockets; the
dashboard uses `progress_by_run`."""

import json
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Prefetch

from agents_app.approvals.patterns import call_hosts
from agents_app.approvals.selectors import approval_pending_for_run
from agents_app.core.events import EventType, event_message
from agents_app.models import (
    Approval,
    ApprovalKind,
    Plan,
    Run,
    RunEvent,
    RunStatus,
    Step,
    StepStatus,
    ToolCall,
    ToolCallStatus,
)
from agents_app.runs.selectors import plan_replacements
from agents_app.web.plan_editor import StepRow, editor_formset, rows_of_plan

ARGUMENTS_SHOWN = 80


_THINK_BLOCK = re.compile(r"<(think|thinking)>(.*?)(?:</\1>|\Z)", re.DOTALL | re.IGNORECASE)


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def cut(text: str, limit: int = ARGUMENTS_SHOWN) -> str:
    """The first `limit` characters, with an ellipsis when something was cut off."""
    return text if len(text) <= limit else text[:limit] + "…"


def split_think(text: str) -> tuple[str, str]:
    """(`text` without its <think>/<thinking> blocks, the blocks' contents)."""
    thoughts = [m.group(2).strip() for m in _THINK_BLOCK.finditer(text or "")]
    visible = _THINK_BLOCK.sub("", text or "").strip()
    return visible, "\n\n".join(t for t in thoughts if t)


def event_summary(event: dict[str, Any]) -> str:
    """One line a person can read for an event of the run's log."""
    kind, p = event["event_type"], event.get("payload") or {}

    def step() -> str:
        index = p.get("index", p.get("step_index"))
        return f"step {index + 1}" if isinstance(index, int) else "step"

    if kind == EventType.RUN_QUEUED:
        return f"queued (attempt {p.get('attempt', 1)})"
    if kind == EventType.RUN_STATUS:
        return f"status → {p.get('status', '?')}"
    if kind == EventType.PLAN_CREATED:
        edited = f", edited by {p['edited_by']}" if p.get("edited_by") else ""
        return f"plan v{p.get('version', '?')} with {len(p.get('steps') or [])} steps{edited}"
    if kind == EventType.REPLANNED:
        # A person's rejection is no replan of the verifier's (nor counted as one).
        if p.get("by") == "person":
            return cut(f"new plan asked: {p.get('reason', '')}", 160)
        return cut(f"replan {p.get('replans', '')}: {p.get('reason', '')}", 160)
    if kind == EventType.STEP_STARTED:
        resumed = " (resumed after an interruption)" if p.get("resumed_after_interruption") else ""
        return cut(f"{step()} started{resumed}: {p.get('objective', '')}", 160)
    if kind == EventType.TOOL_CALL:
        return f"{step()} calls {p.get('tool', '?')} {cut(compact_json(p.get('arguments', {})))}"
    if kind == EventType.TOOL_RESULT:
        took = f" in {p['duration_ms']} ms" if p.get("duration_ms") is not None else ""
        error = f": {p.get('error_code') or ''} {p.get('error') or ''}".rstrip()
        outcome = (
            p.get("status", "?")
            + took
            + (error if p.get("status") == ToolCallStatus.FAILED else "")
        )
        return cut(f"{step()} tool call {outcome}", 160)
    if kind == EventType.STEP_COMPLETED:
        return f"{step()} completed"
    if kind == EventType.STEP_FAILED:
        status = p.get("status", StepStatus.FAILED)
        return cut(f"{step()} {status}: {p.get('error_code', '')} {p.get('error', '')}", 160)
    if kind == EventType.STEP_SKIPPED:
        return cut(f"{step()} skipped: {p.get('reason', '')}", 160)
    if kind == EventType.VERIFICATION:
        verdict = "complete" if p.get("task_complete") else "incomplete"
        return verdict + (", replan asked" if p.get("should_replan") else "")
    if kind == EventType.PROGRESS_UPDATE:
        return f"progress {p.get('percent', 0)}% ({p.get('current_step', 0)}/{p.get('total_steps', 0)})"
    if kind == EventType.LLM_USAGE:
        return (
            f"{p.get('model', 'LLM')}: {p.get('prompt_tokens', 0)} prompt + "
            f"{p.get('completion_tokens', 0)} completion tokens"
        )
    if kind == EventType.LLM_RETRY:
        return cut(
            f"LLM call failed ({p.get('code', '')}: {p.get('reason', '')}); retrying in "
            f"{p.get('delay', 0):g} s (attempt {p.get('attempt', '?')} of {p.get('attempts', '?')})",
            200,
        )
    if kind == EventType.DECOMPOSITION_REFUSED:
        then = "one agent does the whole task" if p.get("then") == "single agent" else "again"
        return cut(f"split refused ({then}): {p.get('reason', '')}", 240)
    if kind == EventType.RESULT:
        return f"result: {p.get('status', '?')}"
    if kind == EventType.ERROR:
        return cut(f"{p.get('code', '')}: {p.get('message', '')}", 160)
    if kind == EventType.CANCEL_REQUESTED:
        return "cancel requested"
    if kind == EventType.APPROVAL_REQUIRED:
        what = (
            "the plan" if p.get("kind") == ApprovalKind.PLAN else f"{step()} {p.get('tool', '?')}"
        )
        return cut(f"waiting for approval of {what} ({p.get('level', '')})", 160)
    if kind == EventType.APPROVAL_DECIDED:
        by = p.get("decided_by") or ("its timeout" if p.get("expired") else "the system")
        return cut(f"approval {p.get('status', '?')} by {by}", 160)
    return kind


def log_entries(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "seq": e["seq"],
            "type": e["event_type"],
            "time": datetime.fromisoformat(e["created_at"]),
            "summary": event_summary(e),
            # A result's colour follows its outcome (succeeded, failed, cancelled).
            "outcome": (e.get("payload") or {}).get("status", "")
            if e["event_type"] == EventType.RESULT
            else "",
        }
        for e in events
    ]


@dataclass(frozen=True)
class Progress:
    percent: int
    done: int
    total: int
    label: str


# Arguments that are code or a command to run: the dialog shows each whole, as it would run.
CODE_ARGUMENTS = ("code", "argv", "command", "cmd", "script", "args")


def code_to_run(arguments: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, text) of each argument that is code or a command, written out in full: a
    snippet with its own lines, an argv as the command line it makes."""
    shown = []
    for name in CODE_ARGUMENTS:
        value = arguments.get(name)
        if isinstance(value, str) and value.strip():
            shown.append((name, value))
        elif isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            shown.append((name, shlex.join(value)))
    return shown


def progress_of(run: Run, step_statuses: list[str]) -> Progress:
    """How far the run is, from the statuses of its latest plan's steps in index order: the
    completed steps over the planned ones (a failed, skipped or timed-out step is not
    progress), and, once the run has ended, what became of each step. A run that succeeded
    with no step failed is whole, steps skipped after an early finish_task included."""
    total = len(step_statuses)
    done = sum(1 for status in step_statuses if status == StepStatus.COMPLETED)
    unfinished = {StepStatus.FAILED, StepStatus.TIMEOUT}
    if run.status == RunStatus.SUCCEEDED and not unfinished & set(step_statuses):
        percent = 100
    else:
        percent = round(100 * done / total) if total else 0
    # Several at once: the steps of a parallel plan running side by side (worker.parallel).
    running = [i + 1 for i, s in enumerate(step_statuses) if s == StepStatus.RUNNING]
    if run.status == RunStatus.QUEUED:
        label = "Waiting for a worker"
    elif run.status == RunStatus.PLANNING:
        label = "Planning" if not total else "Planning again"
    elif run.status == RunStatus.VERIFYING:
        label = "Verifying the result"
    elif run.status == RunStatus.WAITING_APPROVAL:
        label = f"{done} of {total} steps completed · waiting for your approval"
    elif run.status == RunStatus.PAUSED:
        label = f"{done} of {total} steps completed · paused by the kill switch"
    elif len(running) > 1:
        numbers = ", ".join(str(n) for n in running[:-1]) + f" and {running[-1]}"
        label = f"Steps {numbers} of {total} running side by side"
    elif running:
        label = f"Step {running[0]} of {total}"
    elif run.is_terminal:
        label = " · ".join([*_step_outcomes(step_statuses), str(run.status)])
    else:
        label = f"{done} of {total} steps completed"
    return Progress(percent=percent, done=done, total=total, label=label)


_OUTCOME_WORDS = {
    StepStatus.COMPLETED: "completed",
    StepStatus.FAILED: "failed",
    StepStatus.TIMEOUT: "timed out",
    StepStatus.CANCELLED: "cancelled",
    StepStatus.SKIPPED: "skipped",
    StepStatus.PENDING: "not started",
    StepStatus.RUNNING: "running",
}


def _step_outcomes(step_statuses: list[str]) -> list[str]:
    """`["1 completed", "1 failed", "1 skipped"]`: how many steps ended each way, in that order."""
    return [
        f"{count} {word}"
        for status, word in _OUTCOME_WORDS.items()
        if (count := step_statuses.count(status))
    ]


def progress_by_run(runs: list[Run]) -> dict[int, Progress]:
    """Progress of each run from its latest plan's steps, in one query."""
    latest: dict[int, int] = {}
    statuses: dict[tuple[int, int], list[str]] = {}
    rows = (
        Step.objects.filter(run__in=[r.pk for r in runs])
        .order_by("index")
        .values_list("run_id", "plan__version", "status")
    )
    for run_id, version, status in rows:
        latest[run_id] = max(latest.get(run_id, 0), version)
        statuses.setdefault((run_id, version), []).append(status)
    return {
        run.pk: progress_of(run, statuses.get((run.pk, latest.get(run.pk, 0)), [])) for run in runs
    }


def plan_step_statuses(plan: Plan | None) -> list[str]:
    return [step.status for step in plan.steps.all()] if plan else []


def plans_with_steps(run: Run) -> list[Plan]:
    return list(
        Plan.objects.filter(run=run)
        .order_by("version")
        .prefetch_related(
            Prefetch(
                "steps",
                queryset=Step.objects.order_by("index").prefetch_related(
                    Prefetch("tool_calls", queryset=ToolCall.objects.order_by("id"))
                ),
            )
        )
    )


@dataclass(frozen=True)
class Thought:
    label: str
    text: str


def reasoning_of(plans: list[Plan], verifications: list[RunEvent], run: Run) -> list[Thought]:
    """What the model thought, one entry per phase: each plan's planning, each step's thinking
    (reasoning fields and <think> blocks kept by the engine, plus any block left in the
    output), the verifier's thinking and reasoning, in that order."""
    thoughts = []
    several = len(plans) > 1
    for plan in plans:
        if plan.thinking.strip():
            label = f"Planning v{plan.version}" if several else "Planning"
            thoughts.append(Thought(label, plan.thinking.strip()))
        for step in plan.steps.all():
            _, in_output = split_think(step.output)
            text = "\n\n".join(t for t in (step.thinking.strip(), in_output) if t)
            if text:
                prefix = f"Plan v{plan.version} · " if several else ""
                thoughts.append(Thought(f"{prefix}Step {step.index + 1}", text))
    for number, event in enumerate(verifications, start=1):
        payload = event.payload or {}
        parts = (str(payload.get(key) or "").strip() for key in ("thinking", "reasoning"))
        text = "\n\n".join(part for part in parts if part)
        if text:
            suffix = f" {number}" if len(verifications) > 1 else ""
            thoughts.append(Thought(f"Verification{suffix}", text))
    _, in_response = split_think(run.final_response)
    if in_response:
        thoughts.append(Thought("Final answer", in_response))
    return thoughts


def result_context(run: Run) -> dict[str, Any]:
    answer, _ = split_think(run.final_response)
    last = RunEvent.objects.filter(run=run, type=EventType.RESULT).order_by("-seq").first()
    return {
        "answer": answer,
        "agent_result": json.dumps(last.payload, indent=2, ensure_ascii=False) if last else "",
    }


def decorate_plans(plans: list[Plan]) -> list[Plan]:
    """Attach what the step template shows but cannot compute (visible output, short args)."""
    for plan in plans:
        for step in plan.steps.all():
            step.visible_output, _ = split_think(step.output)
            step.number = step.index + 1
            step.depends_on_numbers = [index + 1 for index in step.depends_on]
            for call in step.tool_calls.all():
                call.arguments_json = compact_json(call.arguments)
                call.arguments_short = cut(call.arguments_json)
                call.result_json = (
                    json.dumps(call.result, indent=2, ensure_ascii=False, default=str)
                    if call.result is not None
                    else ""
                )
    return plans


def plan_context(plans: list[Plan]) -> dict[str, Any]:
    plans = decorate_plans(plans)
    return {"current_plan": plans[-1] if plans else None, "older_plans": plans[:-1][::-1]}


def _one_host(arguments: Any) -> str:
    hosts = set(call_hosts(arguments)) if isinstance(arguments, dict) else set()
    return hosts.pop() if len(hosts) == 1 else ""


def approval_context(
    approval: Approval | None,
    *,
    error: Any = None,
    arguments_text: str | None = None,
    note_text: str = "",
    plan_rows: list[StepRow] | None = None,
    edit_note_text: str = "",
    editor: str = "",
) -> dict[str, Any]:
    """What the approval card and its dialog show (the dialog opens wherever it arrives).
    `arguments_text` and `note_text` keep what the person typed when their edit or feedback
    was refused. A plan's editor holds its steps, or `plan_rows` as the person left them, with
    `edit_note_text`; `editor` ("form" or "json") is the one they used, open again."""
    if approval is None:
        return {"approval": None, "approval_error": error}
    is_plan = approval.kind == ApprovalKind.PLAN
    steps = approval.arguments.get("steps", []) if is_plan else []
    editable = {"steps": steps} if is_plan else approval.arguments
    return {
        "approval": approval,
        "approval_is_plan": is_plan,
        "approval_plan_steps": [s if isinstance(s, dict) else {"objective": s} for s in steps],
        "approval_arguments": json.dumps(approval.arguments, indent=2, ensure_ascii=False),
        "approval_code": [] if is_plan else code_to_run(approval.arguments),
        # The one host the call reaches, which "allow this host" remembers (approvals.patterns).
        "approval_host": "" if is_plan else _one_host(approval.arguments),
        "approval_arguments_text": (
            arguments_text
            if arguments_text is not None
            else json.dumps(editable, indent=2, ensure_ascii=False)
        ),
        "approval_note_text": note_text,
        "approval_error": error,
        **(
            {
                "plan_formset": editor_formset(
                    plan_rows if plan_rows is not None else rows_of_plan(steps)
                ),
                "plan_edit_note_text": edit_note_text,
                "plan_editor": editor,
            }
            if is_plan
            else {}
        ),
    }


def run_page_context(*, run: Run, plans: list[Plan], events: list[RunEvent]) -> dict[str, Any]:
    """Everything the run page renders. Read `events` before the rows so the regions are at
    least as new as the last seq the page reports (the socket replays what follows it)."""
    verifications = [e for e in events if e.type == EventType.VERIFICATION]
    current = plans[-1] if plans else None
    return {
        "run": run,
        "replacements": plan_replacements(run, plans),
        **plan_context(plans),
        "progress": progress_of(run, plan_step_statuses(current)),
        "thoughts": reasoning_of(plans, verifications, run),
        **result_context(run),
        "log": log_entries(event_message(e) for e in events),
        "last_seq": events[-1].seq if events else 0,
        **approval_context(approval_pending_for_run(run)),
    }
