"""HTML for the pages' live regions: the run page and the dashboard render these partials, and
the WebSocket consumers send the same partials as htmx out-of-band swaps, so ids always match.

Regions re-render from the database, never from event payloads: a replayed or repeated event
then cannot leave the page in a state the rows do not hold.
"""

from typing import Any

from django.template.loader import render_to_string
from django.utils.html import format_html

from agents_app.approvals.selectors import approval_pending_for_run
from agents_app.core.events import EventType
from agents_app.engine.hooks import StreamPhase
from agents_app.models import (
    TERMINAL_STATUSES,
    Approval,
    ApprovalStatus,
    Run,
    RunEvent,
)
from agents_app.runs.selectors import plan_replacements
from agents_app.web.files import render_files_tree
from agents_app.web.run_page import (
    approval_context,
    decorate_plans,
    log_entries,
    plan_context,
    plan_step_statuses,
    plans_with_steps,
    progress_by_run,
    progress_of,
    reasoning_of,
    result_context,
)
from agents_app.web.stream_view import final_view
from tools_app.templatetags.tools_panel import panel_context

# Which regions of the run page an event changes. The event log gets every event regardless.
REGIONS_BY_EVENT: dict[EventType, frozenset[str]] = {
    EventType.RUN_QUEUED: frozenset({"status", "controls", "meta"}),
    # A run that ends while it waits voids its approval: the card must go.
    EventType.RUN_STATUS: frozenset(
        {"status", "controls", "meta", "progress", "result", "stream_reset", "approval"}
    ),
    EventType.CANCEL_REQUESTED: frozenset({"controls"}),
    # A plan a person edited is one more replacement: the meta counts it.
    EventType.PLAN_CREATED: frozenset({"plan", "progress", "reasoning", "stream_reset", "meta"}),
    EventType.REPLANNED: frozenset({"plan", "progress", "reasoning", "meta"}),
    EventType.STEP_STARTED: frozenset({"steps", "progress", "stream_reset"}),
    EventType.TOOL_CALL: frozenset({"steps", "meta"}),
    # A tool may have written a file: the Files panel's tree is read again.
    EventType.TOOL_RESULT: frozenset({"steps", "files"}),
    EventType.STEP_COMPLETED: frozenset({"steps", "progress", "reasoning", "stream_reset"}),
    EventType.STEP_FAILED: frozenset({"steps", "progress", "reasoning", "stream_reset"}),
    EventType.STEP_SKIPPED: frozenset({"steps", "progress"}),
    EventType.VERIFICATION: frozenset({"reasoning", "result", "stream_reset"}),
    EventType.PROGRESS_UPDATE: frozenset({"progress"}),
    EventType.LLM_USAGE: frozenset({"meta"}),
    EventType.LLM_RETRY: frozenset({"status"}),
    EventType.RESULT: frozenset({"status", "controls", "meta", "progress", "result", "files"}),
    EventType.ERROR: frozenset({"result"}),
    EventType.APPROVAL_REQUIRED: frozenset({"approval", "steps", "progress"}),
    EventType.APPROVAL_DECIDED: frozenset({"approval", "steps", "progress"}),
}
STEP_EVENTS = frozenset(
    {
        EventType.STEP_STARTED,
        EventType.TOOL_CALL,
        EventType.TOOL_RESULT,
        EventType.STEP_COMPLETED,
        EventType.STEP_FAILED,
        EventType.STEP_SKIPPED,
        EventType.APPROVAL_REQUIRED,
        EventType.APPROVAL_DECIDED,
    }
)


# --- small helpers -----------------------------------------------------------------------------


# --- what the regions show ---------------------------------------------------------------------


# --- the consumers' side ----------------------------------------------------------------------


def render_run_events(*, run: Run, events: list[dict[str, Any]]) -> str:
    """Out-of-band fragments bringing a run page up to date after `events` (event_message dicts
    in seq order): each changed region re-rendered from the rows, one log line per event, and
    the page's last seq. Empty string for no events."""
    if not events:
        return ""
    run = Run.objects.select_related("task").get(pk=run.pk)
    regions: set[str] = set()
    for event in events:
        regions |= REGIONS_BY_EVENT.get(event["event_type"], frozenset())
        # Ending a run closes its open steps without a step event of their own.
        if (
            event["event_type"] == EventType.RUN_STATUS
            and event["payload"].get("status") in TERMINAL_STATUSES
        ):
            regions.add("plan")
    parts: list[str] = []
    context: dict[str, Any] = {"run": run, "oob": True}
    if "meta" in regions:
        context["replacements"] = plan_replacements(run)

    for name, template in (
        ("status", "agents/partials/run_status.html"),
        ("controls", "agents/partials/run_controls.html"),
        ("meta", "agents/partials/run_meta.html"),
    ):
        if name in regions:
            parts.append(render_to_string(template, context))

    needs_plans = regions & {"plan", "steps", "progress", "reasoning"}
    plans = plans_with_steps(run) if needs_plans else []
    current = plans[-1] if plans else None
    if "plan" in regions:
        parts.append(
            render_to_string("agents/partials/plan.html", {**context, **plan_context(plans)})
        )
    elif "steps" in regions and current is not None:
        indexes = {
            e["payload"].get("index", e["payload"].get("step_index"))
            for e in events
            if e["event_type"] in STEP_EVENTS
        }
        decorate_plans([current])
        for step in current.steps.all():
            if step.index in indexes:
                parts.append(
                    render_to_string(
                        "agents/partials/step.html", {**context, "plan": current, "step": step}
                    )
                )
    if "progress" in regions:
        progress = progress_of(run, plan_step_statuses(current))
        parts.append(
            render_to_string("agents/partials/progress.html", {**context, "progress": progress})
        )
    if "reasoning" in regions:
        verifications = list(
            RunEvent.objects.filter(run=run, type=EventType.VERIFICATION).order_by("seq")
        )
        parts.append(
            render_to_string(
                "agents/partials/reasoning.html",
                {**context, "thoughts": reasoning_of(plans, verifications, run)},
            )
        )
    if "result" in regions:
        parts.append(
            render_to_string("agents/partials/result.html", {**context, **result_context(run)})
        )
    if "approval" in regions:
        parts.append(
            render_to_string(
                "agents/partials/approval.html",
                {**context, **approval_context(approval_pending_for_run(run))},
            )
        )
    if "files" in regions:
        parts.append(render_files_tree(run=run, oob=True))
    if "stream_reset" in regions:
        steps = list(current.steps.all()) if current is not None else None
        parts.append(
            render_to_string(
                "agents/partials/stream.html", {**context, "stream": final_view(run, steps)}
            )
        )
    parts.append(
        render_to_string("agents/partials/event_log_append.html", {"log": log_entries(events)})
    )
    parts.append(
        render_to_string(
            "agents/partials/last_seq.html", {"last_seq": events[-1]["seq"], "oob": True}
        )
    )
    return "".join(parts)


def token_label(message: dict[str, Any]) -> str:
    phase, index = message.get("phase"), message.get("step_index")
    if phase == StreamPhase.PLANNING:
        return "Planning"
    if phase == StreamPhase.VERIFICATION:
        return "Verifying"
    return f"Step {index + 1}" if isinstance(index, int) else "Working"


def render_run_token(*, run_id: int, message: dict[str, Any]) -> str:
    """A streamed piece of model output, appended (escaped) to the answer or, for reasoning, to
    the live reasoning panel. No database access: consumers call it from async code."""
    target = "reasoning-live" if message.get("reasoning") else "stream"
    return format_html(
        '<span id="{}-label" class="muted" hx-swap-oob="true">{}</span>'
        '<span hx-swap-oob="beforeend:#{}">{}</span>',
        target,
        token_label(message),
        target,
        message.get("token", ""),
    )


def render_run_row(*, run: Run) -> str:
    """The dashboard's row for `run`, as an out-of-band swap."""
    run = Run.objects.select_related("task").get(pk=run.pk)
    progress = progress_by_run([run])[run.pk]
    return render_to_string(
        "agents/partials/run_row.html", {"run": run, "progress": progress, "oob": True}
    )


def render_servers_panel(*, user: Any) -> str:
    """The MCP server dropdown's summary and body, as out-of-band swaps (the dropdown's open
    state is kept)."""
    context = {**panel_context(), "oob": True, "user": user}
    return render_to_string("tools/partials/servers_summary.html", context) + render_to_string(
        "tools/partials/servers_body.html", context
    )


def render_approvals_count(*, user_id: int) -> str:
    """The header's count of the user's pending approvals, as an out-of-band swap."""
    pending = Approval.objects.filter(owner_id=user_id, status=ApprovalStatus.PENDING).count()
    return render_to_string(
        "agents/partials/nav_count.html", {"approvals_pending": pending, "oob": True}
    )
