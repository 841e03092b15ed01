"""The run page's Team panel, on the page of a head node and of each of its children: the
tree of runs (kind or profile, status, subtask, tokens, a link to each; a child waiting for
approval links to it) and the Messages timeline (the tree's AgentMessages). The page renders
it whole; the page socket renders it again whenever the tree changes (`tree.<root id>`)."""

from dataclasses import dataclass
from typing import Any

from django.template.loader import render_to_string

from agents_app.core.errors import DomainError
from agents_app.models import (
    AgentMessage,
    Approval,
    ApprovalStatus,
    MessageType,
    Run,
    RunStatus,
)
from agents_app.orchestration.selectors import tree_messages, tree_runs
from agents_app.runs.recipes import recipe_for
from agents_app.web.run_page import compact_json, cut

# The newest messages the timeline shows; REST pages through all of them.
MESSAGES_SHOWN = 200
SUMMARY_CHARS = 140
CORRELATION_CHARS = 8


@dataclass(frozen=True)
class TeamNode:
    run: Run
    who: str  # "head node", a profile's name, "micro agent"
    indent: int  # depth below the root of the tree
    approval: Approval | None  # the approval a child waits for
    current: bool  # the run whose page this is


@dataclass(frozen=True)
class TimelineEntry:
    message: AgentMessage
    summary: str
    correlation: str  # shortened


def in_a_tree(run: Run) -> bool:
    """A head node (a kind that delegates), a run below one, or a run whose step started a
    micro agent (it parked while the agent worked: a run that never parked is spared the
    query)."""
    if recipe_for(run.kind).delegates or run.root_id is not None:
        return True
    parked = run.parked_at is not None or bool(run.parked_seconds)
    return parked and Run.objects.filter(parent_id=run.pk).exists()


def who(run: Run) -> str:
    return recipe_for(run.kind).name_in_tree(run)


def _files(payload: dict[str, Any]) -> str:
    files = payload.get("artifacts")
    return f" (files: {', '.join(map(str, files))})" if isinstance(files, list) and files else ""


def _assignment(p: dict[str, Any]) -> str:
    index = p.get("step_index")
    return (f"subtask {index + 1}: " if isinstance(index, int) else "") + str(p.get("subtask", ""))


def _result(p: dict[str, Any]) -> str:
    error = p.get("error") if isinstance(p.get("error"), dict) else {}
    text = str(p.get("summary", ""))
    if error.get("code") and not text.startswith(str(error["code"])):
        text = f"{error['code']}: {text}"
    return text + _files(p)


def _status(p: dict[str, Any]) -> str:
    return f"{p.get('was', '?')} → {p.get('lifecycle', '?')} ({p.get('status', '?')})"


def _context(p: dict[str, Any]) -> str:
    step = p.get("intermediate_result")
    which = f"subtask {int(step) + 1}'s" if str(step).isdigit() else "its"
    return f"{which} result joins the shared context" + _files(p)


# How each type of message reads in one line; any other type shows its JSON.
SUMMARIES = {
    MessageType.TASK_ASSIGNMENT: _assignment,
    MessageType.TASK_RESULT: _result,
    MessageType.ERROR: _result,
    MessageType.STATUS_RESPONSE: _status,
    MessageType.CONTEXT_UPDATE: _context,
}


def message_summary(message: AgentMessage) -> str:
    """One short line of a message's payload: the subtask assigned, the result's summary or
    error, the change of lifecycle, what joined the shared context."""
    payload = message.payload if isinstance(message.payload, dict) else {}
    summarise = SUMMARIES.get(message.type)
    text = summarise(payload) if summarise else compact_json(payload)
    return cut(" ".join(text.split()), SUMMARY_CHARS)


def team_context(*, user: Any, run: Run) -> dict[str, Any]:
    """What the Team panel shows for `run`'s page; `{"team": None}` for a run in no tree."""
    if not in_a_tree(run):
        return {"team": None}
    _, runs = tree_runs(user=user, run_id=run.pk)
    root = runs[0] if runs else run
    waiting = [r.pk for r in runs if r.status == RunStatus.WAITING_APPROVAL]
    approvals = {
        a.run_id: a
        for a in Approval.objects.filter(run_id__in=waiting, status=ApprovalStatus.PENDING)
    }
    nodes = [
        TeamNode(
            run=r,
            who=who(r),
            indent=max(0, r.depth - root.depth),
            approval=approvals.get(r.pk),
            current=r.pk == run.pk,
        )
        for r in runs
    ]
    messages = tree_messages(user=user, run_id=run.pk)
    total = messages.count()
    shown = list(messages[max(0, total - MESSAGES_SHOWN) :])
    timeline = [
        TimelineEntry(
            message=m,
            summary=message_summary(m),
            correlation=str(m.correlation_id)[:CORRELATION_CHARS],
        )
        for m in shown
    ]
    parent = next((r for r in runs if r.pk == run.parent_id), None)
    return {
        "team": {
            "root": root,
            "parent": parent,
            "nodes": nodes,
            "timeline": timeline,
            "earlier": total - len(shown),
        }
    }


def render_team(*, user: Any, run: Run) -> str:
    """The Team panel as an out-of-band swap (empty for a run in no tree, or gone)."""
    try:
        context = team_context(user=user, run=run)
    except DomainError:  # deleted since the socket opened: nothing to show
        return ""
    if context["team"] is None:
        return ""
    return render_to_string("agents/partials/team.html", {**context, "run": run, "oob": True})
