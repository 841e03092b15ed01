"""How a run moves on outside a decision: queueing it for a worker, skipping a step, ending
the run (closing its steps, its result event, the `run.finished` webhook) and its
workspace directory."""

import contextlib
import os
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Case, Value, When
from django.utils import timezone

from agents_app.core import dispatch, rows
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.event_payloads import (
    CancelRequestedPayload,
    ErrorPayload,
    PlanCreatedPayload,
    StepSkippedPayload,
)
from agents_app.core.events import EventType
from agents_app.core.secrecy import redact, redact_all
from agents_app.models import (
    ACTIVE_STATUSES,
    PARKED_STATUSES,
    Approval,
    ApprovalStatus,
    AuditInterface,
    ClosePolicy,
    Plan,
    Run,
    RunStatus,
    Step,
    StepStatus,
    ToolCall,
    ToolCallStatus,
)
from agents_app.runs.files import workspace_name
from agents_app.runs.presenters import agent_result, finished_payload
from agents_app.runs.recipes import recipe_for
from agents_app.runs.selectors import current_plan
from agents_app.runs.writer import RunWriter
from agents_app.webhooks.services import RUN_FINISHED, webhooks_notify


def run_enqueue(*, run_id: int) -> None:
    """Queue execution once the current transaction commits (a worker must see the rows)."""
    dispatch.send_on_commit(dispatch.TaskName.EXECUTE_RUN, run_id)


def new_plan(
    w: RunWriter,
    *,
    previous: Plan | None,
    raw: dict[str, Any],
    thinking: str,
    steps: list[tuple[str, list[str], str, list[int]]],
    shown: dict[str, Any],
    reason: str | None = None,
) -> tuple[Plan, list[Step]]:
    """The run's next plan version with its steps (objective, tool names, reasoning, the
    steps it depends on) and its plan_created event (`shown`: what the event says of it
    besides the version; `reason`: why this version, the run's replan reason unless given).
    Returns the plan and its steps in index order, as they were written (with their ids):
    what the database holds of them."""
    version = (previous.version if previous else 0) + 1
    why = w.run.replan_reason if reason is None else reason
    plan = Plan(run=w.run, version=version, reason=why, raw=raw, thinking=thinking)
    rows.insert([plan], ids=True)
    written = [
        Step(
            plan=plan,
            run=w.run,
            index=index,
            objective=objective,
            tool_names=tool_names,
            reasoning=reasoning,
            depends_on=depends_on,
        )
        for index, (objective, tool_names, reasoning, depends_on) in enumerate(steps)
    ]
    rows.insert(written, ids=True)
    w.event(EventType.PLAN_CREATED, PlanCreatedPayload(version=version, **shown))
    return plan, written


def skip_step(w: RunWriter, step: Step, reason: str) -> None:
    step.set_status(StepStatus.SKIPPED)
    step.error = reason
    step.finished_at = timezone.now()
    step.save(update_fields=["status", "error", "finished_at"])
    w.event(EventType.STEP_SKIPPED, StepSkippedPayload(index=step.index, reason=reason))


def cancel_request(w: RunWriter, message: str = "Cancelled by request") -> bool:
    """Ask the locked run to stop, in `w`'s transaction (its cancel_requested, and the event
    once). Nobody executes a run queued or parked without a lease: it ends now, cancelled with
    `message` (True). One a worker holds ends at that worker's next checkpoint (False)."""
    run = w.run
    if not run.cancel_requested:
        w.set(cancel_requested=True)
        w.event(EventType.CANCEL_REQUESTED, CancelRequestedPayload())
    if run.status in (RunStatus.QUEUED, *PARKED_STATUSES) and not run.lease_owner:
        finish(w, RunStatus.CANCELLED, ErrorCode.CANCELLED, message)
        return True
    return False


def finish(
    w: RunWriter,
    status: str,
    code: str = "",
    message: str = "",
    details: Any = None,
    *,
    held: tuple[Plan | None, list[Step]] | None = None,
    cause: str = "",
) -> None:
    """End the run: close unfinished steps, record the outcome and the AgentResult event.
    `held`: the run's latest plan and its steps as the worker holding the lease holds them
    (what the database holds: nobody else writes them meanwhile), so they are not read
    again and only a step that needs closing is written. `cause`: what went wrong at the root
    when `message` adds more (the run's error_cause; otherwise the message is the cause)."""
    run = w.run
    if run.is_terminal:
        return
    # The message may quote a model or tool server: it reaches steps, events and pages.
    message, details = redact(message), redact_all(details)
    plan, steps = held if held is not None else (current_plan(run), None)
    recipe = recipe_for(run.kind)
    if plan is not None and recipe.transcript:
        # A step parked at an approval said and heard things its transcript must keep.
        parked = (
            [s for s in steps if s.progress is not None]
            if steps is not None
            else Step.objects.filter(plan=plan, progress__isnull=False).order_by("index")
        )
        for step in parked:
            recipe.keep_parked(w, step.progress, _closed_at_end(code, message))
    if plan is not None:
        # A step a person's cancel cut short (running, or waiting for them) is cancelled.
        left = StepStatus.CANCELLED if status == RunStatus.CANCELLED else StepStatus.FAILED
        _close_steps(plan, steps, f"{code}: {message}", f"run ended: {code or status}", left)
    if run.tool_calls_made:  # counted in the commit that writes each call's row
        # A call left waiting is skipped; one left running (its worker crashed or died mid-call)
        # failed: no call outlives its run as `running`.
        ToolCall.objects.filter(
            run=run, status__in=[ToolCallStatus.WAITING_APPROVAL, ToolCallStatus.RUNNING]
        ).update(
            status=Case(
                When(status=ToolCallStatus.WAITING_APPROVAL, then=Value(ToolCallStatus.SKIPPED)),
                default=Value(ToolCallStatus.FAILED),
            ),
            error=f"run ended: {code or status}",
        )
    # An approval waits only while its run is parked: a run that never parked has none.
    if run.status in PARKED_STATUSES or run.parked_at is not None or run.parked_seconds:
        Approval.objects.filter(run=run, status=ApprovalStatus.PENDING).update(
            status=ApprovalStatus.VOID, decided_at=timezone.now()
        )
    if status != RunStatus.SUCCEEDED:
        w.set(error_code=code, error_message=message, error_cause=redact(cause) or message)
    w.transition(status)
    if status == RunStatus.FAILED:
        w.event(EventType.ERROR, ErrorPayload(code=code, message=message, details=details or {}))
    w.event(EventType.RESULT, agent_result(run, plan, steps))
    webhooks_notify(user_id=run.owner_id, event_type=RUN_FINISHED, payload=finished_payload(run))
    # What its kind does at its end (a chat answers the message waiting next, a contract
    # writes its log, a child hands back its envelope): its recipe, which lives in a package
    # above this one (runs.recipes).
    recipe.on_finish(w)


def children_end_with(w: RunWriter, *, parked_only: bool = True) -> None:
    """A kind's on_finish, in the transaction that ends the run: its children still working
    (a micro agent a step's call started, a team's subtasks) are cancelled after the commit,
    unless its close policy lets them finish. `parked_only`: look only if the run ever
    parked (a step's call parks it while its micro agent works), sparing the others a query."""
    run = w.run
    if run.close_policy != ClosePolicy.CANCEL:
        return
    if parked_only and run.parked_at is None and not run.parked_seconds:
        return
    if Run.objects.filter(parent=run, status__in=ACTIVE_STATUSES | PARKED_STATUSES).exists():
        transaction.on_commit(partial(cancel_children, run.pk))


def cancel_children(parent_id: int) -> None:
    """Cancel every child of the parent that is still working, as the worker (audited as
    run.cancel): a parked or queued one ends now, a running one at its next checkpoint (its
    own end cancels its children in turn)."""
    from agents_app.runs.services import run_cancel  # it finishes runs with this module

    working = ACTIVE_STATUSES | PARKED_STATUSES
    for child in Run.objects.filter(parent_id=parent_id, status__in=working):
        with contextlib.suppress(DomainError):  # it ended meanwhile
            run_cancel(run=child, actor=None, interface=AuditInterface.WORKER)


def _closed_at_end(code: str, message: str) -> str:
    """The result a call waiting for a person gets in a transcript when its run ends."""
    if code == ErrorCode.CANCELLED:
        return "Skipped: the answer was stopped while this call waited for a person."
    return f"Skipped: the answer ended ({code}: {message}) while this call waited for a person."


def _close_steps(
    plan: Plan, steps: list[Step] | None, failed: str, skipped: str, left: str
) -> None:
    """At a run's end, its plan's steps left running end `left` (failed, or cancelled when
    the run was; `failed`: why), its pending ones are skipped (`skipped`: why) and a parked
    step's progress is dropped: in the rows, and in `steps` when the caller holds them (then
    only the steps that change are written)."""
    now = timezone.now()
    fail = {"status": left, "error": failed, "finished_at": now}
    skip = {"status": StepStatus.SKIPPED, "error": skipped, "finished_at": now}
    if steps is None:
        Step.objects.filter(plan=plan, status=StepStatus.RUNNING).update(**fail)
        Step.objects.filter(plan=plan, status=StepStatus.PENDING).update(**skip)
        Step.objects.filter(plan=plan, progress__isnull=False).update(progress=None)
        return
    for step in steps:
        changes = {
            StepStatus.RUNNING: fail,
            StepStatus.PENDING: skip,
        }.get(step.status, {})
        if step.progress is not None:
            changes = {**changes, "progress": None}
        if changes:
            for name, value in changes.items():
                if name == "status":
                    step.set_status(value)  # told to the board the worker decides from
                else:
                    setattr(step, name, value)
            rows.update(Step, step.pk, **changes)


def workspace_for(run: Any) -> Path:
    path = _workspace_path(settings.WORKSPACE_ROOT, workspace_name(run))
    if not os.path.isdir(path):  # one stat a step, where mkdir would fail and raise
        path.mkdir(parents=True, exist_ok=True)
    return path


@lru_cache(maxsize=1024)
def _workspace_path(root: str | Path, name: str) -> Path:
    """Built once per run, not at every step (a Path costs more than the stat)."""
    return Path(root) / name
