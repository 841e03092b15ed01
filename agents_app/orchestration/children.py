"""A run's children (docs/ARCHITECTURE.md, "Teams are trees of runs"): starting one for a
step, what it hands back (its envelope), what its end does to its parent, and what the end of
a parent does to the children still working.

Every child is a Run of the one engine with its own Task: leased, resumable, streamed,
approved and audited like any run. A parent parks in `waiting_children` and holds no worker;
the child whose end lets it go on (the last one working, or one whose result another subtask
was waiting for) queues it again, in the transaction that ends the child.

Locks are taken child first, then parent, and never the other way round: a parent's own
transactions lock only the parent, and cancelling its children happens after it commits.
"""

import hashlib
import math
import uuid
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q, Sum

from agents_app.core import dispatch
from agents_app.core.event_payloads import (
    ChildFinishedPayload,
    ChildRetriedPayload,
    ChildStartedPayload,
    RunQueuedPayload,
)
from agents_app.core.events import EventType
from agents_app.engine.team import RECOVERY_LIMITS, recovery, recovery_kind
from agents_app.models import (
    ACTIVE_STATUSES,
    PARKED_STATUSES,
    TERMINAL_STATUSES,
    AgentMessage,
    AgentProfile,
    MessageType,
    Origin,
    Plan,
    Run,
    RunKind,
    RunStatus,
    Step,
    StepStatus,
    Task,
    ToolCall,
    ToolCallStatus,
)
from agents_app.runs.admission import run_admit
from agents_app.runs.lifecycle import children_end_with, run_enqueue
from agents_app.runs.recipes import recipe_for
from agents_app.runs.writer import RunWriter, locked_run

WORKING = ACTIVE_STATUSES | PARKED_STATUSES
# Tools that wait for something outside the run; a micro agent could never return from them
# (seed 003 leaves out its base agent's rest_n_wait and take_a_break).
WAITING_TOOLS = frozenset({"wait", "sleep", "rest_n_wait", "take_a_break", "ask_user"})
# A tool named wait_for_<something> waits for that something.
WAITING_PREFIX = "wait_for_"
FINISH_TOOL = "finish_task"
HEAD_NODE = "head node"


def is_waiting(spec: Any) -> bool:
    """Whether a tool waits for something outside the run: staff flagged it (`waits`), or its
    own name says so whatever its server's prefix (`timer.sleep`, `x.wait_for_event`)."""
    if getattr(spec, "waits", False):
        return True
    own = spec.name.rsplit(".", 1)[-1].lower().replace("-", "_")
    return own in WAITING_TOOLS or own.startswith(WAITING_PREFIX)


def agent_name(run: Run) -> str:
    """How the timeline names a run: its profile, "micro agent", or the head node (its
    recipe says)."""
    return recipe_for(run.kind).agent_name(run)


def tree_of(root_id: int) -> Any:
    return Run.objects.filter(Q(pk=root_id) | Q(root_id=root_id))


def tree_usage(root_id: int) -> dict[str, int]:
    """Tokens and tool calls of a whole tree: the root's budget pays for all of them."""
    totals = tree_of(root_id).aggregate(
        prompt=Sum("prompt_tokens"),
        completion=Sum("completion_tokens"),
        calls=Sum("tool_calls_made"),
    )
    return {
        "tokens": (totals["prompt"] or 0) + (totals["completion"] or 0),
        "tool_calls": totals["calls"] or 0,
    }


def busy_by_profile() -> dict[str, int]:
    """Runs of each profile that have not ended, across every worker: a concurrency limit
    counts these."""
    rows = (
        Run.objects.filter(profile__isnull=False, status__in=WORKING)
        .exclude(kind=RunKind.TEAM)
        .values("profile__name")
        .annotate(n=Count("id"))
    )
    return {row["profile__name"]: row["n"] for row in rows}


def subtask_key(parent: Run, profile_name: str, text: str) -> str:
    """The (from, to, subtask) of a delegation, as one string a guard compares."""
    digest = hashlib.sha256(" ".join(text.lower().split()).encode()).hexdigest()[:16]
    return f"{parent.tree_root_id}:{parent.pk}:{profile_name.lower()}:{digest}"


def delegated_before(parent: Run, profile_name: str, text: str) -> Run | None:
    """The earlier child of this parent given the same subtask by the same profile that did
    not fail (it works, or it succeeded), if any: a second one would repeat its work. One that
    failed or was cancelled, and its tries again, is no such repeat: a replan may try its
    subtask again (AGENT_MAX_REPLANS bounds how often)."""
    key = subtask_key(parent, profile_name, text)
    return (
        Run.objects.filter(parent=parent, delegation__startswith=key)
        .exclude(status__in=(RunStatus.FAILED, RunStatus.CANCELLED))
        .only("id", "status")
        .order_by("pk")
        .first()
    )


def spawn_child(
    w: RunWriter,
    step: Step,
    *,
    kind: str,
    text: str,
    context: dict[str, Any],
    profile: AgentProfile | None = None,
    persona: str = "",
    allowed_tools: list[str] | None = None,
    excluded_tools: list[str] = (),
    max_steps: int | None = None,
    max_seconds: int | None = None,
    retry: str = "",
    delay: float = 0.0,
) -> Run:
    """A queued child of the locked parent (`w`) for its `step`, with its own Task, and the
    task_assignment message. The parent's step is marked running; the child is queued for a
    worker when the transaction commits. Budgets: the profile's, never more than what the
    root has left."""
    parent = w.run
    root_id = parent.tree_root_id
    used = tree_usage(root_id)
    root = parent if parent.pk == root_id else Run.objects.get(pk=root_id)
    tokens_left = max(1, root.max_tokens - used["tokens"])
    calls_left = max(1, root.max_tool_calls - used["tool_calls"])
    max_tokens = min(tokens_left, (profile.max_tokens if profile else None) or tokens_left)
    max_calls = min(calls_left, (profile.max_tool_calls if profile else None) or calls_left)
    context = dict(context)
    if max_steps is not None:
        context["max_steps"] = max_steps
    connection = profile.connection if profile is not None else parent.connection
    # Its phase models: its profile's (unset: its own connection for every phase), or a micro
    # agent's parent's.
    phases = profile if profile is not None else parent.task
    task = Task.objects.create(
        owner_id=parent.owner_id,
        text=text,
        context=context,
        max_tokens=max_tokens,
        max_tool_calls=max_calls,
        max_seconds=max_seconds
        or (profile.max_seconds if profile else None)
        or parent.task.max_seconds,
        approval_timeout=parent.task.approval_timeout,
        approval_on_timeout=parent.task.approval_on_timeout,
        # A micro agent is one open-ended step; a profile's child plans when its part needs it.
        fast_path=recipe_for(kind).task_fast_path,
        connection=connection,
        planning_connection_id=phases.planning_connection_id,
        verifying_connection_id=phases.verifying_connection_id,
        persona=persona or (profile.persona if profile else ""),
        allowed_tools=allowed_tools,
        excluded_tools=list(excluded_tools),
    )
    if connection is None or not connection.enabled:
        connection = parent.connection
    replaying = parent.origin == Origin.REPLAY
    child = Run.objects.create(
        # A replay's child is a replay of its source's matching child (none: it diverged, and
        # its first model call says so; it never asks a model).
        origin=Origin.REPLAY if replaying else Origin.NONE,
        origin_run=source_child(parent, step) if replaying else None,
        # The tools its root was asked to run again, run again by the whole tree.
        origin_options={"rerun": list(parent.origin_options.get("rerun") or ())}
        if replaying
        else {},
        task=task,
        owner_id=parent.owner_id,
        kind=kind,
        parent=parent,
        parent_step=step,
        root_id=root_id,
        depth=parent.depth + 1,
        profile=profile,
        close_policy=parent.close_policy,
        delegation=subtask_key(parent, profile.name if profile else kind, text) + retry,
        max_tokens=max_tokens,
        max_tool_calls=max_calls,
        connection=connection,
        llm_model=(profile.model if profile and profile.model else "")
        or (connection.model if connection is not None else ""),
    )
    with locked_run(child.pk) as cw:
        cw.event(
            EventType.RUN_QUEUED,
            RunQueuedPayload(task=text, attempt=1, parent_id=parent.pk, root_id=root_id),
        )
    step.set_status(StepStatus.RUNNING)
    step.save(update_fields=["status"])
    correlation = uuid.uuid4()
    AgentMessage.objects.create(
        root_id=root_id,
        sender=parent,
        recipient=child,
        from_agent=agent_name(parent),
        to_agent=agent_name(child),
        type=MessageType.TASK_ASSIGNMENT,
        payload={"step_index": step.index, "subtask": text, "kind": kind},
        correlation_id=correlation,
    )
    w.event(
        EventType.CHILD_STARTED,
        ChildStartedPayload(
            child_id=child.pk,
            step_index=step.index,
            kind=kind,
            profile=profile.name if profile else "",
            subtask=text,
        ),
    )
    if delay:
        dispatch.send_on_commit(dispatch.TaskName.EXECUTE_RUN, child.pk, countdown=delay)
    else:
        run_admit(child)
    return child


def source_child(parent: Run, step: Step) -> Run | None:
    """For a replay's new child of `step`: the child its source started for the step of the
    same index, the same how-many-th (a retry, a replan's step), or None."""
    nth = Run.objects.filter(parent=parent, parent_step__index=step.index).count()
    return (
        Run.objects.filter(parent_id=parent.origin_run_id, parent_step__index=step.index)
        .order_by("pk")[nth : nth + 1]
        .first()
    )


# --- how a child is: seed 001's lifecycle and its status messages ---------------------------

# A run's status as seed 001's agent lifecycle names it.
LIFECYCLE = {
    RunStatus.QUEUED: "idle",
    RunStatus.PLANNING: "active",
    RunStatus.RUNNING: "active",
    RunStatus.VERIFYING: "active",
    RunStatus.WAITING_CHILDREN: "active",
    RunStatus.PAUSED: "paused",
    RunStatus.WAITING_APPROVAL: "paused",
    RunStatus.SUCCEEDED: "done",
    RunStatus.FAILED: "failed",
    RunStatus.CANCELLED: "failed",
}


def lifecycle(status: str) -> str:
    return LIFECYCLE.get(status, "active")


def on_run_transition(w: RunWriter, before: str, after: str) -> None:
    """A child's and a micro agent's on_transition (runs.recipes): a child whose lifecycle
    changes (it starts, is paused on a person or the kill switch, goes on again) tells its
    parent with a status_response; its end is its task_result (hand_back)."""
    run = w.run
    if run.parent_id is None or after in TERMINAL_STATUSES:
        return
    was, now = lifecycle(before), lifecycle(after)
    if was == now:
        return
    tell_parent(
        run,
        run.parent,
        MessageType.STATUS_RESPONSE,
        {"lifecycle": now, "was": was, "status": after},
        assignment_of(run),
    )


def assignment_of(child: Run) -> Any:
    """The correlation id of the task_assignment that started `child` (None: none)."""
    return (
        AgentMessage.objects.filter(recipient=child, type=MessageType.TASK_ASSIGNMENT)
        .values_list("correlation_id", flat=True)
        .first()
    )


def tell_parent(child: Run, parent: Run, type: str, payload: Any, correlation: Any) -> None:
    """A message from `child` to its parent in their tree, under `correlation` (a new id when
    the child has none)."""
    AgentMessage.objects.create(
        root_id=child.tree_root_id,
        sender=child,
        recipient=parent,
        from_agent=agent_name(child),
        to_agent=agent_name(parent),
        type=type,
        payload=payload,
        correlation_id=correlation or uuid.uuid4(),
    )


# --- a child's envelope ---------------------------------------------------------------------


def estimate_tokens(text: str) -> int:
    """About four characters a token: what a budget of tokens is checked with, on any model."""
    return math.ceil(len(text) / 4)


def cap_tokens(text: str, tokens: int) -> str:
    if estimate_tokens(text) <= tokens:
        return text
    return text[: max(0, tokens * 4 - 1)].rstrip() + "…"


def envelope_of(run: Run) -> ChildFinishedPayload:
    """What a child hands its parent (never its transcript, which stays on its own page):
    status, a summary capped at TEAM_SUMMARY_TOKENS, the files it wrote, what it spent and
    the ids of the steps its result rests on."""
    if run.status == RunStatus.SUCCEEDED:
        said = run.final_response or ""
    else:
        said = f"{run.error_code}: {run.error_message}".strip(": ")
    summary = cap_tokens(said, settings.TEAM_SUMMARY_TOKENS)
    written = ToolCall.objects.filter(
        run=run, status=ToolCallStatus.SUCCEEDED, tool="write_file"
    ).values_list("arguments", flat=True)
    artifacts = sorted({a.get("path") for a in written if isinstance(a, dict) and a.get("path")})
    evidence = list(
        Step.objects.filter(run=run, status=StepStatus.COMPLETED)
        .order_by("plan__version", "index")
        .values_list("pk", flat=True)
    )
    envelope: ChildFinishedPayload = {
        "run_id": run.pk,
        "kind": run.kind,
        "profile": run.profile.name if run.profile_id and run.profile else "",
        "status": run.status,
        "summary": summary,
        "summary_tokens": estimate_tokens(summary),
        "artifacts": artifacts,
        "usage": {
            "prompt_tokens": run.prompt_tokens,
            "completion_tokens": run.completion_tokens,
            "tool_calls": run.tool_calls_made,
        },
        "evidence_step_ids": evidence,
    }
    if run.status != RunStatus.SUCCEEDED:
        envelope["error"] = {"code": run.error_code, "message": run.error_message}
    return envelope


# --- what a run's end does to its tree ------------------------------------------------------


def on_run_finished(w: RunWriter, *, frees_a_profile: bool) -> None:
    """The end of a run of a tree (the head node's, a child's, a micro agent's recipe), in
    the transaction that ends the run: its children are cancelled after the commit unless its
    close policy lets them finish; a child hands its envelope to its parent and may queue it;
    a run of a profile (`frees_a_profile`: not the head node's, which runs as the
    orchestrator) frees a place a queued subtask may be waiting for."""
    run = w.run
    children_end_with(w, parked_only=False)
    if run.parent_id is not None:
        hand_back(w)
    if frees_a_profile and run.profile_id is not None:
        for waiting in queued_teams():
            transaction.on_commit(lambda rid=waiting: wake_if_waiting(rid))


def hand_back(w: RunWriter) -> None:
    """The ended child's envelope goes to its parent's step, with a task_result (or error)
    message; the parent is queued again when no other child works or this result lets a
    waiting subtask start."""
    child = w.run
    envelope = envelope_of(child)
    w.set(envelope=envelope)
    with locked_run(child.parent_id) as pw:
        parent = pw.run
        assignment = assignment_of(child)
        succeeded = child.status == RunStatus.SUCCEEDED
        tell_parent(
            child,
            parent,
            MessageType.TASK_RESULT if succeeded else MessageType.ERROR,
            envelope,
            assignment,
        )
        pw.event(EventType.CHILD_FINISHED, envelope)
        if parent.is_terminal:
            return
        if not recipe_for(parent.kind).delegates:
            # A step's call started it (orchestration.micro_tool): that step goes on, with the
            # child's result as its call's, when the run is queued again.
            if parent.status == RunStatus.WAITING_CHILDREN and should_wake(parent, child.pk):
                pw.transition(RunStatus.RUNNING, reason=f"child {child.pk} ended")
                run_enqueue(run_id=parent.pk)
            return
        if child.status == RunStatus.SUCCEEDED:
            share(pw, child, envelope, assignment)
        step = (
            Step.objects.filter(pk=child.parent_step_id).first() if child.parent_step_id else None
        )
        if (
            step is not None
            and step.status == StepStatus.RUNNING
            and child.status == RunStatus.FAILED
            and retried(pw, child, step)
        ):
            return
        if step is not None and step.status == StepStatus.RUNNING:
            succeeded = child.status == RunStatus.SUCCEEDED
            step.set_status(StepStatus.COMPLETED if succeeded else StepStatus.FAILED)
            step.output = envelope["summary"] if succeeded else ""
            step.error = "" if succeeded else envelope["summary"]
            step.save(update_fields=["status", "output", "error"])
        if parent.status == RunStatus.WAITING_CHILDREN and should_wake(parent, child.pk):
            pw.transition(RunStatus.RUNNING, reason=f"child {child.pk} ended")
            run_enqueue(run_id=parent.pk)


def share(pw: RunWriter, child: Run, envelope: dict[str, Any], correlation: Any) -> None:
    """What a child found joins its parent's shared context, which the children started
    after it read: its result under its step, its files among the artifacts. Told to the
    parent as a context_update."""
    shared = dict(pw.run.shared or {})
    step = str(child.parent_step.index) if child.parent_step_id else str(child.pk)
    results = dict(shared.get("intermediate_results") or {})
    results[step] = {"child_run_id": child.pk, "summary": envelope["summary"]}
    shared["intermediate_results"] = results
    added = [a for a in envelope["artifacts"] if a not in (shared.get("artifacts") or [])]
    shared["artifacts"] = [*(shared.get("artifacts") or []), *added]
    pw.set(shared=shared)
    tell_parent(
        child,
        pw.run,
        MessageType.CONTEXT_UPDATE,
        {"intermediate_result": step, "artifacts": added},
        correlation,
    )


def retried(pw: RunWriter, child: Run, step: Step) -> bool:
    """Seed 001's recovery: a child that failed in a way the table covers is tried again
    by a new child for the same step, up to the table's limit for that kind of failure
    (then the step fails and its parent replans or fails with the child's error)."""
    kind = recovery_kind(child.error_code, child.error_message)
    if not kind:
        return False
    tried = Run.objects.filter(parent_step=step, delegation__contains=f"#{kind}-").count()
    plan = recovery(child.error_code, child.error_message, tried)
    if plan is None:
        return False
    task = child.task
    context = {k: v for k, v in task.context.items() if k != "last_try"}
    if plan.note:
        context["last_try"] = plan.note
    limit = task.max_seconds or int(settings.AGENT_RUN_TIMEOUT)
    again = spawn_child(
        pw,
        step,
        kind=child.kind,
        text=task.text,
        context=context,
        profile=child.profile,
        persona=task.persona,
        allowed_tools=task.allowed_tools,
        excluded_tools=task.excluded_tools,
        max_steps=task.context.get("max_steps"),
        max_seconds=int(limit * plan.time_factor),
        retry=f"#{kind}-{tried + 1}",
        delay=plan.delay,
    )
    pw.event(
        EventType.CHILD_RETRIED,
        ChildRetriedPayload(
            index=step.index,
            failed_child_id=child.pk,
            child_id=again.pk,
            recovery=kind,
            retry=tried + 1,
            limit=RECOVERY_LIMITS[kind][1],
            delay=plan.delay,
        ),
    )
    return True


def should_wake(parent: Run, ended_child_id: int) -> bool:
    """No other child of `parent` is working, or a pending step of its plan has all it needs."""
    working = (
        Run.objects.filter(parent=parent, status__in=WORKING).exclude(pk=ended_child_id).exists()
    )
    if not working:
        return True
    plan = Plan.objects.filter(run=parent).order_by("-version").first()
    if plan is None:
        return False
    steps = {s.index: s for s in Step.objects.filter(plan=plan)}
    return any(
        s.status == StepStatus.PENDING
        and all(steps[d].status == StepStatus.COMPLETED for d in s.depends_on if d in steps)
        for s in steps.values()
    )


def queued_teams() -> list[int]:
    """Head nodes parked with no child working: a subtask of theirs waits for a profile."""
    parked = Run.objects.filter(kind=RunKind.TEAM, status=RunStatus.WAITING_CHILDREN)
    busy = Run.objects.filter(parent_id__in=parked.values("pk"), status__in=WORKING).values(
        "parent_id"
    )
    return list(parked.exclude(pk__in=busy).order_by("created_at").values_list("pk", flat=True))


def wake_if_waiting(run_id: int) -> None:
    with locked_run(run_id) as w:
        if w.run.status == RunStatus.WAITING_CHILDREN:
            w.transition(RunStatus.RUNNING, reason="a profile has room")
            run_enqueue(run_id=run_id)
