"""An attempt's log file: a timestamped text file under AGENT_LOG_DIR, rendered from the
attempt's rows (its events and its transcript), so it is complete whenever it is written,
even after a crash; it is written again after every cycle and at the attempt's end."""

import json
import os
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils.text import slugify

from agents_app.contracts.selectors import STATUS_LABELS, ended_as
from agents_app.core.event_payloads import LogFailedPayload
from agents_app.core.events import EventType
from agents_app.models import TERMINAL_STATUSES, ConversationEntry, EntryKind, Run, RunEvent
from agents_app.runs.writer import RunWriter

RESULT_CHARS = 2_000
# From the transcript: what the agent and the person said (the calls come from the events,
# which exist even for a cycle cut short by a crash).
SAID = (EntryKind.USER, EntryKind.ASSISTANT, EntryKind.REASONING)


def log_path(run: Run) -> Path:
    agent = run.conversation.agent
    stamp = run.created_at.strftime("%Y%m%d-%H%M%S")
    name = slugify(agent.name) or "agent"
    return (
        Path(settings.AGENT_LOG_DIR)
        / f"{name}-{agent.pk}-attempt-{run.task.context.get('attempt', run.attempt)}-{stamp}.log"
    )


def _clip(value: Any) -> str:
    # Keys sorted: PostgreSQL's jsonb keeps its own key order, and a log reads the same on both.
    text = (
        value
        if isinstance(value, str)
        else json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    )
    return text if len(text) <= RESULT_CHARS else text[:RESULT_CHARS] + " …"


def _event_line(event: RunEvent, cycle: int) -> str | None:
    p = event.payload
    match event.type:
        case EventType.RUN_STATUS:
            # How the attempt ended is the [end] line's, in the word the agent's tab uses.
            return None if p.get("status") in TERMINAL_STATUSES else f"status {p.get('status')}"
        case EventType.STEP_STARTED:
            if p.get("resumed_after_interruption"):
                return (
                    f"cycle {cycle} started again after an interruption "
                    f"(attempt {p.get('retry_count', 0) + 1})"
                )
            if p.get("resumed_after_approval"):
                return f"cycle {cycle} resumed after a decision"
            return f"cycle {cycle} started"
        case EventType.TOOL_CALL:
            return f"[tool] {p.get('tool')} {_clip(p.get('arguments', {}))}"
        case EventType.TOOL_RESULT:
            if p.get("status") == "succeeded":
                return f"[result] {_clip(p.get('result'))}"
            return f"[error] {p.get('error_code')}: {p.get('error')}"
        case EventType.APPROVAL_REQUIRED:
            return f"[approval] waiting for a person: {p.get('tool', 'plan')}"
        case EventType.APPROVAL_DECIDED:
            return f"[approval] {p.get('decision')}"
        case EventType.CONTRACT_EVALUATION:
            verdict = "met" if p.get("met") else "not met"
            return f"[evaluation] contract {verdict}: {p.get('reason')}"
        case EventType.LLM_RETRY:
            return f"[llm] retrying after {p.get('reason')}"
        case EventType.ERROR:
            return f"[error] {p.get('code')}: {p.get('message')}"
        case EventType.RESULT:
            error = p.get("final_error") or {}
            status, reason = ended_as(
                status=p.get("status", ""),
                error_code=error.get("code"),
                error_message=error.get("message", ""),
                response=p.get("response", ""),
            )
            return f"[end] {STATUS_LABELS[status]}: {reason}"
        case EventType.LOG_FAILED:
            return None
    return None


def render_log(run: Run) -> str:
    agent = run.conversation.agent
    rows: list[tuple[datetime, int, str]] = []
    cycle = 0
    for event in RunEvent.objects.filter(run=run).order_by("seq"):
        if event.type == EventType.PLAN_CREATED:
            cycle = event.payload.get("version", cycle + 1)
        line = _event_line(event, cycle)
        if line is not None:
            rows.append((event.created_at, 0, line))
    for entry in ConversationEntry.objects.filter(
        conversation_id=run.conversation_id, seq__isnull=False, kind__in=SAID
    ).order_by("seq"):
        label = {"user": "contract", "assistant": "agent", "reasoning": "thinking"}[entry.kind]
        rows.append((entry.created_at, 1, f"[{label}] {entry.text}"))
    rows.sort(key=lambda row: (row[0], row[1]))
    header = [
        f"# {agent.name} (agent {agent.pk}), attempt {run.task.context.get('attempt', run.attempt)}, run {run.pk}",
        f"# started {run.created_at.isoformat()}",
        "",
    ]
    body = [f"{at.strftime('%Y-%m-%dT%H:%M:%S.%f')[:-3]}Z {line}" for at, _, line in rows]
    return "\n".join(header + body) + "\n"


def write_log(run: Run) -> Path:
    """Render and write the attempt's log (atomically: a reader never sees half a file).
    Raises OSError when it cannot be written."""
    path = log_path(run)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Its own temporary name: a download and the worker may write at the same moment.
    partial = path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}.partial")
    partial.write_text(render_log(run), encoding="utf-8")
    partial.replace(path)
    return path


def keep_log(w: RunWriter) -> None:
    """Write the log of a contract attempt; a failure is told once per attempt as a
    log_failed event (the attempt goes on: the rows still hold everything). Called by the
    contract's recipe after each cycle and at the attempt's end, once each."""
    run = w.run
    if run.conversation_id is None:
        return
    w.flush()  # the events collected so far are part of the log
    try:
        write_log(run)
    except OSError as exc:
        if not RunEvent.objects.filter(run=run, type=EventType.LOG_FAILED).exists():
            w.event(
                EventType.LOG_FAILED,
                LogFailedPayload(path=str(log_path(run)), error=f"{type(exc).__name__}: {exc}"),
            )


def log_text(run: Run) -> tuple[str, str | None]:
    """The attempt's log, rendered from its rows now, and why its file could not be written
    (None when it was). The file is written only once the attempt ended: while it runs, it is
    the worker's to write."""
    if not run.is_terminal:
        return render_log(run), None
    try:
        return write_log(run).read_text(encoding="utf-8"), None
    except OSError as exc:
        return render_log(run), f"{type(exc).__name__}: {exc}"
