"""State changes asked for by people (REST, MCP, pages, admin). Each is one transaction, and
each records its AuditEvent in it: `interface` says where the person acted, and is required
so that no caller can leave it silently wrong."""

import contextlib
import json
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.db import transaction

from agents_app.connections.services import (
    connection_ensure_default,
    connection_for_phase,
    connection_for_task,
)
from agents_app.connections.services import llm_missing_settings as llm_missing_settings
from agents_app.core import rows
from agents_app.core.audit import (
    RUN_CANCEL,
    RUN_PAUSE,
    RUN_RESTART,
    RUN_RESUME,
    TASK_SUBMIT,
    audit_record,
)
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.event_payloads import RunQueuedPayload
from agents_app.core.events import EventType
from agents_app.core.inputs import STORED_INT_MAX, json_problem, text_problem
from agents_app.models import (
    ClosePolicy,
    KillSwitch,
    Run,
    RunKind,
    RunStatus,
    Task,
    TimeoutStrategy,
)
from agents_app.runs.admission import admission_check, run_admit
from agents_app.runs.control import refuse_while_halted
from agents_app.runs.lifecycle import cancel_request, run_enqueue
from agents_app.runs.recipes import recipe_for
from agents_app.runs.writer import RunWriter, locked_run

# Task.approval_timeout is a PositiveIntegerField: the column's range.
APPROVAL_TIMEOUT_MAX = STORED_INT_MAX


def _validate_task(text: str, context: Any) -> None:
    if not isinstance(text, str) or not text.strip():
        raise DomainError(ErrorCode.VALIDATION_ERROR, "The task text is empty", {"field": "task"})
    if problem := text_problem(text):
        raise DomainError(ErrorCode.VALIDATION_ERROR, f"The task text {problem}", {"field": "task"})
    if len(text) > settings.TASK_MAX_CHARS:
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            f"The task text is {len(text)} characters; at most {settings.TASK_MAX_CHARS} are allowed",
            {"field": "task", "length": len(text), "max_length": settings.TASK_MAX_CHARS},
        )
    if not isinstance(context, dict):
        raise DomainError(
            ErrorCode.VALIDATION_ERROR, "The context must be a JSON object", {"field": "context"}
        )
    if found := json_problem(context):
        path, problem = found
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            f"The context cannot be stored: {f'{path} ' if path else ''}{problem}",
            {"field": "context", "path": path},
        )
    size = len(json.dumps(context, ensure_ascii=False).encode())
    if size > settings.CONTEXT_MAX_BYTES:
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            f"The context is {size} bytes; at most {settings.CONTEXT_MAX_BYTES} are allowed",
            {"field": "context", "size": size, "max_size": settings.CONTEXT_MAX_BYTES},
        )


def _validate_budgets(**budgets: Any) -> None:
    # Task's budget columns are PositiveIntegerFields: PostgreSQL refuses more than 2^31 - 1.
    for field, value in budgets.items():
        if value is not None and (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not 1 <= value <= STORED_INT_MAX
        ):
            raise DomainError(
                ErrorCode.VALIDATION_ERROR,
                f"{field} is a whole number from 1 to {STORED_INT_MAX}, or null",
                {"field": field},
            )


def _validate_approval_options(timeout: Any, on_timeout: Any) -> None:
    # bool is an int to Python, and True seconds is no timeout anyone meant.
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, int)
        or not 1 <= timeout <= APPROVAL_TIMEOUT_MAX
    ):
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            f"approval_timeout is whole seconds from 1 to {APPROVAL_TIMEOUT_MAX}, or null",
            {"field": "approval_timeout"},
        )
    if on_timeout not in (None, "", *TimeoutStrategy.values):
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            f"Unknown approval_on_timeout {on_timeout!r}",
            {"field": "approval_on_timeout", "allowed": TimeoutStrategy.values},
        )


@transaction.atomic
def task_submit(
    *,
    owner: Any,
    interface: str,
    text: str,
    context: dict[str, Any] | None = None,
    max_tokens: int | None = None,
    max_tool_calls: int | None = None,
    approve_plan: bool = False,
    approval_timeout: int | None = None,
    approval_on_timeout: str | None = None,
    fast_path: bool | None = None,
    connection: int | str | None = None,
    planning_connection: int | str | None = None,
    verifying_connection: int | str | None = None,
    team: bool = False,
    close_policy: str | None = None,
) -> Run:
    """Create a Task and its first Run and queue it for a worker. Returns the Run. The owner is
    the actor of the audit event: a task is always submitted by the person it belongs to.
    `approve_plan` parks the run on its plan before any step; `approval_timeout` (seconds) and
    `approval_on_timeout` (deny | skip | cancel) override APPROVAL_TIMEOUT and its strategy.
    `fast_path` True runs the task as one direct step, False always plans, None leaves it to
    AGENT_FAST_PATH_MAX_CHARS. `connection` is the id or name of an enabled LLM connection;
    None: the default; it executes the steps. `planning_connection` and `verifying_connection`
    (id or name, None: `connection`'s) plan and verify (models.ModelPhase). `team` has a head node split the task among the agent profiles
    (orchestration) instead of one agent doing it; `close_policy` (cancel | finish) says
    whether its children are cancelled or let finish when it ends before them (None: cancel).
    Raises DomainError VALIDATION_ERROR for bad input (an unknown or disabled connection too),
    LLM_NOT_CONFIGURED without a usable LLM."""
    context = {} if context is None else context
    _validate_task(text, context)
    _validate_budgets(max_tokens=max_tokens, max_tool_calls=max_tool_calls)
    _validate_approval_options(approval_timeout, approval_on_timeout)
    if fast_path is not None and not isinstance(fast_path, bool):
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            "fast_path must be true, false or null",
            {"field": "fast_path"},
        )
    if not isinstance(team, bool):
        raise DomainError(
            ErrorCode.VALIDATION_ERROR, "team must be true or false", {"field": "team"}
        )
    if close_policy is not None and close_policy not in ClosePolicy.values:
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            f"close_policy must be one of {', '.join(ClosePolicy.values)}",
            {"field": "close_policy", "allowed": list(ClosePolicy.values)},
        )
    refuse_while_halted()
    turns = admission_check(owner.pk)
    chosen = connection_for_task(connection)
    planner = connection_for_phase(planning_connection, field="planning_connection")
    verifier = connection_for_phase(verifying_connection, field="verifying_connection")
    task = rows.new(
        Task,
        owner=owner,
        text=text,
        context=context,
        max_tokens=max_tokens,
        max_tool_calls=max_tool_calls,
        approve_plan=bool(approve_plan),
        approval_timeout=approval_timeout,
        approval_on_timeout=approval_on_timeout or "",
        fast_path=fast_path,
        connection=chosen,
        planning_connection=planner,
        verifying_connection=verifier,
        team=team,
    )
    rows.insert([task], ids=True)  # the short way: no compiler (core.rows)
    run = run_create(task=task, close_policy=close_policy or ClosePolicy.CANCEL, first=True)
    audit_record(
        action=TASK_SUBMIT, interface=interface, actor=owner, run=run, details={"task_id": task.pk}
    )
    run_admit(run, turns)
    return run


@transaction.atomic(savepoint=False)
def run_create(
    *,
    task: Task,
    kind: str | None = None,
    conversation: Any = None,
    close_policy: str = ClosePolicy.CANCEL,
    first: bool = False,
) -> Run:
    """A new queued Run of `task` with the task's budgets (or the defaults) and its first
    event. The caller enqueues it (run_enqueue) once it should start. A chat answer (`kind`
    chat) names its `conversation`; `close_policy`: what its children do when it ends first;
    `first`: the caller has just created the task, so this is its first attempt."""
    kind = kind or (RunKind.TEAM if task.team else RunKind.TASK)
    if first:
        attempt = 1
    else:
        # The task row is locked so two restarts at once cannot take the same attempt number.
        Task.objects.select_for_update().filter(pk=task.pk).first()
        attempt = task.runs.count() + 1
    # The task's connection while it is enabled, else the default of the moment (which the
    # worker falls back to as well).
    connection = task.connection
    if connection is None or not connection.enabled:
        connection = connection_ensure_default()
    run = rows.new(
        Run,
        task=task,
        owner=task.owner,
        attempt=attempt,
        max_tokens=task.max_tokens or settings.RUN_MAX_TOKENS,
        max_tool_calls=task.max_tool_calls or settings.RUN_MAX_TOOL_CALLS,
        connection=connection,
        llm_model=connection.model if connection is not None else "",
        kind=kind,
        conversation=conversation,
        profile=recipe_for(kind).profile_at_start(),
        close_policy=close_policy,
        event_seq=1,
    )
    rows.insert([run], ids=True)
    # Nobody sees the row before this transaction commits: its first event needs no lock.
    RunWriter(run).first_event(
        EventType.RUN_QUEUED, RunQueuedPayload(task=task.text, attempt=attempt)
    )
    return run


def run_cancel(*, run: Run, actor: Any, interface: str) -> Run:
    """Ask the run to stop. A queued run ends at once; a running one ends at its next
    checkpoint (no new LLM or tool call starts). Returns the run as it is now.
    Raises DomainError CONFLICT when finished."""
    with locked_run(run.pk) as w:
        status_before = w.run.status
        if w.run.is_terminal:
            raise DomainError(
                ErrorCode.CONFLICT,
                f"Run {run.pk} already finished ({status_before})",
                {"status": status_before},
            )
        # Nobody is executing a queued or parked run: it ends now, not at a checkpoint.
        ended_at_once = cancel_request(w)
        audit_record(
            action=RUN_CANCEL,
            interface=interface,
            actor=actor,
            run=w.run,
            details={"status_before": status_before, "ended_at_once": ended_at_once},
        )
    return w.run


# Parked without a lease: nobody would see a pause at a step boundary, so it pauses now; the
# status it goes back to when resumed.
_PAUSE_NOW = {
    RunStatus.QUEUED: RunStatus.QUEUED,
    RunStatus.WAITING_CHILDREN: RunStatus.RUNNING,
}


def run_pause(*, run: Run, actor: Any, interface: str) -> Run:
    """Pause the run (seed 001's lifecycle): a running one parks at its next step boundary,
    a queued one or a head node waiting for its children at once, one waiting for a person
    after the decision; a team's children pause too. It stays paused until `run_resume`,
    whatever the kill switch does. Raises DomainError CONFLICT when finished."""
    with locked_run(run.pk) as w:
        if w.run.is_terminal:
            raise DomainError(
                ErrorCode.CONFLICT,
                f"Run {run.pk} already finished ({w.run.status})",
                {"status": w.run.status},
            )
        status_before = w.run.status
        w.set(pause_requested=True)
        if w.run.status in _PAUSE_NOW and not w.run.lease_owner:
            w.set(resume_status=_PAUSE_NOW[w.run.status])
            w.transition(RunStatus.PAUSED, reason="paused by request")
        audit_record(
            action=RUN_PAUSE,
            interface=interface,
            actor=actor,
            run=w.run,
            details={"status_before": status_before},
        )
    _children_too(run.pk, run_pause, actor, interface)
    return w.run


def run_resume(*, run: Run, actor: Any, interface: str) -> Run:
    """Let a paused run go on from where it stopped (while the kill switch is engaged it
    stays parked until the release); its paused children too. Raises DomainError CONFLICT
    unless it was paused by a person."""
    with locked_run(run.pk) as w:
        if not w.run.pause_requested:
            raise DomainError(
                ErrorCode.CONFLICT,
                f"Run {run.pk} is not paused ({w.run.status})",
                {"status": w.run.status},
            )
        w.set(pause_requested=False)
        resumed = w.run.status == RunStatus.PAUSED and not KillSwitch.is_engaged()
        if resumed:
            w.transition(w.run.resume_status or RunStatus.QUEUED, reason="resumed by request")
            w.set(resume_status="")
            run_enqueue(run_id=run.pk)
        audit_record(
            action=RUN_RESUME,
            interface=interface,
            actor=actor,
            run=w.run,
            details={"resumed": resumed},
        )
    _children_too(run.pk, run_resume, actor, interface)
    return w.run


def _children_too(run_id: int, change: Any, actor: Any, interface: str) -> None:
    """After the parent's commit (a child's lock is never taken under its parent's), the
    same change for each child still working that it applies to."""

    def apply() -> None:
        for child in Run.objects.filter(parent_id=run_id).exclude(
            status__in=(RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED)
        ):
            # It may have ended, or not be paused, meanwhile.
            with contextlib.suppress(DomainError):
                change(run=child, actor=actor, interface=interface)

    transaction.on_commit(apply)


def refuse_unless_offered(run: Run, action: str, done: str) -> Any:
    """The run's recipe, when its kind offers `action` (a recipe's `actions`); else CONFLICT:
    "Run N is a <label>, which is not <done> on its own"."""
    recipe = recipe_for(run.kind)
    if action not in recipe.actions:
        raise DomainError(
            ErrorCode.CONFLICT,
            f"Run {run.pk} is a {recipe.label}, which is not {done} on its own",
            {"kind": run.kind},
        )
    return recipe


@contextlib.contextmanager
def ended_run(run_id: int, still: str) -> Iterator[RunWriter]:
    """The run's row locked (runs.writer.locked_run), when it has ended; else CONFLICT
    "Run N is still <status><still>"."""
    with locked_run(run_id) as w:
        if not w.run.is_terminal:
            raise DomainError(
                ErrorCode.CONFLICT,
                f"Run {run_id} is still {w.run.status}{still}",
                {"status": w.run.status},
            )
        yield w


@transaction.atomic
def run_restart(*, run: Run, actor: Any, interface: str) -> Run:
    """A new attempt of the run's task, queued. Returns the new Run. Raises DomainError
    CONFLICT unless `run` has finished (succeeded, failed or cancelled)."""
    # A chat answer is answered again by writing again, an attempt by its agent's Restart, a
    # subtask by its head node: a new run of its Task would be none of them.
    refuse_unless_offered(run, "restart", "restarted")
    refuse_while_halted()
    with ended_run(run.pk, "; cancel it before restarting"):
        pass
    admission_check(run.owner_id)
    new_run = run_create(task=run.task, close_policy=run.close_policy)
    audit_record(
        action=RUN_RESTART,
        interface=interface,
        actor=actor,
        run=run,
        details={"new_run_id": new_run.pk, "attempt": new_run.attempt},
    )
    run_admit(new_run)
    return new_run
