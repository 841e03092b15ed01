"""Making runs directly in the database, without the API or a queue, and moving them through
their states with the rows and events the engine would write."""

from typing import Any

from django.utils import timezone

from agents_app.core.event_payloads import StepStartedPayload, ToolResultPayload
from agents_app.models import (
    Plan,
    Run,
    RunStatus,
    Step,
    StepStatus,
    Task,
    ToolCall,
    ToolCallStatus,
)
from agents_app.runs.lifecycle import finish
from agents_app.runs.services import run_create
from agents_app.runs.writer import locked_run

# The statuses a run passes through on its way to `status`, from queued.
PATH_TO = {
    RunStatus.PLANNING: [RunStatus.PLANNING],
    RunStatus.RUNNING: [RunStatus.PLANNING, RunStatus.RUNNING],
    RunStatus.VERIFYING: [RunStatus.PLANNING, RunStatus.RUNNING, RunStatus.VERIFYING],
}
# A tool call whose arguments are too long to show whole.
LONG_ARGUMENTS = {"path": "notes/" + "a" * 120 + ".txt", "content": "hello"}


def make_run(
    owner, text="Do the thing", *, max_tokens=None, max_tool_calls=None, fast_path=None
) -> Run:
    """A queued run, as task_submit makes it, but not enqueued."""
    task = Task.objects.create(
        owner=owner,
        text=text,
        max_tokens=max_tokens,
        max_tool_calls=max_tool_calls,
        fast_path=fast_path,
    )
    return run_create(task=task)


def allow_every_call(user) -> None:
    """YOLO mode for `user`, as staff would grant it: tests about something other than
    approvals let MCP tools (external side effects, so `moderate`) run without asking."""
    from agents_app.approvals.rules import yolo_grant, yolo_set

    yolo_grant(user=user, granted=True, actor=None, interface="admin")
    # has_perm caches per user object; a fresh copy sees the new permission.
    fresh = type(user).objects.get(pk=user.pk)
    yolo_set(user=fresh, on=True, interface="web")


def advance(run: Run, status: str) -> Run:
    """Move a queued run to planning, running or verifying as the engine would."""
    with locked_run(run.pk) as w:
        for step in PATH_TO[status]:
            w.transition(step)
    run.refresh_from_db()
    return run


def end(run: Run, status: str, code: str = "", message: str = "", response: str = "") -> Run:
    """Finish a run through the engine's own `finish`, from wherever it stands."""
    if status == RunStatus.SUCCEEDED:
        advance(run, RunStatus.VERIFYING)
    with locked_run(run.pk) as w:
        if response:
            w.set(final_response=response)
        finish(w, status, code, message)
    run.refresh_from_db()
    return run


def to_status(run: Run, *statuses: str) -> Run:
    with locked_run(run.pk) as w:
        for status in statuses:
            w.transition(status)
    run.refresh_from_db()
    return run


def add_plan(run: Run, objectives: list[str], *, version: int = 1, reason: str = "") -> Plan:
    """A plan of pending steps and its plan_created event; the run goes to running."""
    if run.status == RunStatus.QUEUED:
        to_status(run, RunStatus.PLANNING)
    with locked_run(run.pk) as w:
        plan = Plan.objects.create(run=run, version=version, reason=reason)
        for index, objective in enumerate(objectives):
            Step.objects.create(
                plan=plan,
                run=run,
                index=index,
                objective=objective,
                tool_names=["write_file"],
                depends_on=[index - 1] if index else [],
            )
        w.event(
            "plan_created", {"version": version, "steps": [{"objective": o} for o in objectives]}
        )
        w.transition(RunStatus.RUNNING)
    run.refresh_from_db()
    return plan


def complete_step(
    run: Run,
    plan: Plan,
    index: int,
    *,
    output: str = "done",
    thinking: str = "",
    arguments: dict[str, Any] | None = None,
) -> Step:
    """Run one step through started → tool call → result → completed, with their events."""
    step = Step.objects.get(plan=plan, index=index)
    with locked_run(run.pk) as w:
        step.status = StepStatus.RUNNING
        step.started_at = timezone.now()
        step.save()
        w.event(
            "step_started",
            StepStartedPayload(
                index=index,
                objective=step.objective,
                retry_count=0,
                resumed_after_interruption=False,
                resumed_after_approval=False,
            ),
        )
    with locked_run(run.pk) as w:
        call = ToolCall.objects.create(
            run=run, step=step, tool="write_file", arguments=arguments or LONG_ARGUMENTS
        )
        w.set(tool_calls_made=w.run.tool_calls_made + 1)
        w.event(
            "tool_call",
            {
                "tool_call_id": call.pk,
                "step_index": index,
                "tool": call.tool,
                "arguments": call.arguments,
            },
        )
    with locked_run(run.pk) as w:
        ToolCall.objects.filter(pk=call.pk).update(
            status=ToolCallStatus.SUCCEEDED, result={"bytes": 5}, duration_ms=7
        )
        w.event(
            "tool_result",
            ToolResultPayload(
                tool_call_id=call.pk,
                step_index=index,
                status="succeeded",
                result={"bytes": 5},
                error_code="",
                error="",
                duration_ms=7,
            ),
        )
    with locked_run(run.pk) as w:
        step.status = StepStatus.COMPLETED
        step.output = output
        step.thinking = thinking
        step.finished_at = timezone.now()
        step.save()
        w.event("step_completed", {"index": index, "output": output, "thinking": thinking})
    run.refresh_from_db()
    return step


def succeed(run: Run, response: str, *, reasoning: str = "All steps are done.") -> Run:
    to_status(run, RunStatus.VERIFYING)
    with locked_run(run.pk) as w:
        w.event(
            "verification",
            {
                "task_complete": True,
                "reasoning": reasoning,
                "should_replan": False,
                "response": response,
                "evidence": [],
            },
        )
        w.set(final_response=response)
        finish(w, RunStatus.SUCCEEDED)
    run.refresh_from_db()
    return run


def fail(run: Run, code: str = "TOOL_FAILED", message: str = "the tool broke") -> Run:
    with locked_run(run.pk) as w:
        finish(w, RunStatus.FAILED, code, message)
    run.refresh_from_db()
    return run


def executor_of(run: Run, provider=None, registry=None, *, given: Run | None = None):
    """A worker's executor of `run` holding a lease "mine" (the row's lease is not claimed);
    `given`: the run as the worker read it with its lease."""
    from agents_app.runs.lease import Lease
    from agents_app.worker.execution import RunExecutor
    from tests.support.scripted_provider import ScriptedProvider

    lease = Lease(run.pk, "mine", 30)
    return RunExecutor(run.pk, lease, provider or ScriptedProvider([]), registry, run=given)


def decisions_made(monkeypatch) -> list[str]:
    """The run's status at each decision a worker makes from then on (RunExecutor.state_of)."""
    from agents_app.worker.execution import RunExecutor

    statuses: list[str] = []
    state_of = RunExecutor.state_of

    def counted(self, rows, **kwargs):
        statuses.append(rows.run.status)
        return state_of(self, rows, **kwargs)

    monkeypatch.setattr(RunExecutor, "state_of", counted)
    return statuses
