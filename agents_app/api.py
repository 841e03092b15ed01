"""REST endpoints for tasks and runs: Schema in, service or selector, Schema out."""

import time
from datetime import datetime
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja import Field, Query, Router, Schema, Status

from agents_app import selectors, services
from agents_app.errors import ERROR_STATUS
from agents_app.models import TERMINAL_STATUSES, AuditInterface, Run, RunStatus, TimeoutStrategy
from agents_app.services import APPROVAL_TIMEOUT_MAX

router = Router(tags=["runs"])

WAIT_POLL_SECONDS = 0.2


class TaskIn(Schema):
    task: str = Field(description="What the agent should do.")
    context: dict[str, Any] | None = Field(default=None, description="Any JSON object, < 1 MB.")
    wait: bool = Field(default=False, description="Answer with the AgentResult once finished.")
    wait_timeout: float | None = Field(
        default=None, gt=0, description="Seconds to wait (capped by API_MAX_WAIT)."
    )
    max_tokens: int | None = Field(default=None, ge=1, description="LLM token budget of the run.")
    max_tool_calls: int | None = Field(default=None, ge=1, description="Tool call budget.")
    approve_plan: bool = Field(
        default=False, description="Wait for a person to approve the plan before any step runs."
    )
    approval_timeout: int | None = Field(
        default=None,
        ge=1,
        le=APPROVAL_TIMEOUT_MAX,
        description="Seconds an approval waits for a person; null: APPROVAL_TIMEOUT.",
    )
    approval_on_timeout: TimeoutStrategy | None = Field(
        default=None,
        description="What an expired approval decides; null: APPROVAL_TIMEOUT_STRATEGY.",
    )


class RunLinks(Schema):
    self: str
    events: str
    cancel: str
    restart: str
    websocket: str


class RunSummary(Schema):
    id: int
    task_id: int
    task: str
    attempt: int
    status: str
    replans: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    final_response: str
    error_code: str
    error_message: str
    prompt_tokens: int
    completion_tokens: int
    tool_calls_made: int
    max_tokens: int
    max_tool_calls: int
    links: RunLinks


class Accepted(Schema):
    success: bool = True
    run_id: int
    status: str
    links: RunLinks


class ToolCallOut(Schema):
    id: int
    tool: str
    arguments: dict[str, Any]
    result: Any
    error: str
    status: str
    attempt: int
    duration_ms: int | None
    created_at: datetime


class StepOut(Schema):
    index: int
    objective: str
    tool_names: list[str]
    reasoning: str
    depends_on: list[int]
    status: str
    output: str
    error: str
    retry_count: int
    started_at: datetime | None
    finished_at: datetime | None
    tool_calls: list[ToolCallOut]


class PlanOut(Schema):
    version: int
    reason: str
    created_at: datetime
    steps: list[StepOut]


class RunDetail(RunSummary):
    context: dict[str, Any]
    plans: list[PlanOut]


class RunPage(Schema):
    success: bool = True
    count: int
    page: int
    page_size: int
    results: list[RunSummary]


class EventOut(Schema):
    seq: int
    type: str
    payload: dict[str, Any]
    created_at: datetime


class EventPage(Schema):
    success: bool = True
    run_id: int
    status: str
    events: list[EventOut]
    last_seq: int
    has_more: bool


class RunListQuery(Schema):
    status: RunStatus | None = Field(
        default=None,
        description="Only runs in this status; `waiting_approval`: parked on a person's decision.",
    )
    page: int = Field(default=1, ge=1)
    page_size: int = Field(default=20, ge=1, le=100)


def links(run: Run) -> dict[str, str]:
    return selectors.run_links(run)


def page_of(items: Any, page: int, page_size: int, render: Any) -> dict[str, Any]:
    """One page of a query (1-based), as every list answers: count, page, page_size, results
    (each item through `render`)."""
    start = (page - 1) * page_size
    return {
        "count": items.count(),
        "page": page,
        "page_size": page_size,
        "results": [render(item) for item in items[start : start + page_size]],
    }


def summary(run: Run) -> dict[str, Any]:
    return {
        **{field: getattr(run, field) for field in RunSummary.model_fields if hasattr(run, field)},
        "task": run.task.text,
        "links": links(run),
    }


def plan_out(plan: Any) -> dict[str, Any]:
    return {
        "version": plan.version,
        "reason": plan.reason,
        "created_at": plan.created_at,
        "steps": [
            {
                **{f: getattr(step, f) for f in StepOut.model_fields if f != "tool_calls"},
                "tool_calls": list(step.tool_calls.all()),
            }
            for step in plan.steps.all()
        ],
    }


@router.post("/agent/task", response={200: dict, 202: Accepted}, summary="Submit a task")
def submit_task(request: HttpRequest, payload: TaskIn):
    """Queue a task for an agent. 202 with the run's links, or with `wait` 200 and the
    AgentResult once the run finishes (202 if it is still running when the wait ends, or at
    once when it starts waiting for a person's approval: status `waiting_approval`)."""
    run = services.task_submit(
        owner=request.user,
        interface=AuditInterface.API,
        text=payload.task,
        context=payload.context,
        max_tokens=payload.max_tokens,
        max_tool_calls=payload.max_tool_calls,
        approve_plan=payload.approve_plan,
        approval_timeout=payload.approval_timeout,
        approval_on_timeout=payload.approval_on_timeout,
    )
    if payload.wait:
        limit = min(payload.wait_timeout or settings.API_MAX_WAIT, settings.API_MAX_WAIT)
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            status = Run.objects.filter(pk=run.pk).values_list("status", flat=True).first()
            if status in TERMINAL_STATUSES:
                return finished_response(
                    request, selectors.run_get(user=request.user, run_id=run.pk)
                )
            if status == RunStatus.WAITING_APPROVAL:
                run.status = status
                break  # a person must decide first: waiting longer helps nobody
            time.sleep(WAIT_POLL_SECONDS)
    return Status(202, {"run_id": run.pk, "status": run.status, "links": links(run)})


def finished_response(request: HttpRequest, run: Run):
    result = selectors.agent_result(run)
    if run.status == RunStatus.SUCCEEDED:
        return Status(200, {"success": True, "result": result})
    from config.api import error_response

    code = run.error_code or "INTERNAL_ERROR"
    # A cancelled run is no server fault: 409, it ended before it could give a result.
    status = ERROR_STATUS.get(code) or (409 if run.status == RunStatus.CANCELLED else 500)
    return error_response(
        request,
        code,
        run.error_message or run.status,
        {"run_id": run.pk},
        status=status,
        extra={"result": result},
    )


@router.get("/runs", response=RunPage, summary="List your runs")
def list_runs(request: HttpRequest, query: Query[RunListQuery]):
    runs = selectors.runs_for(request.user)
    if query.status:
        runs = runs.filter(status=query.status)
    return page_of(runs, query.page, query.page_size, summary)


@router.get(
    "/runs/{int:run_id}", response=RunDetail, summary="A run with its plans, steps and tool calls"
)
def get_run(request: HttpRequest, run_id: int):
    run = selectors.run_detail(user=request.user, run_id=run_id)
    return {
        **summary(run),
        "context": run.task.context,
        "plans": [plan_out(p) for p in run.plan_list],
    }


@router.get(
    "/runs/{int:run_id}/events", response=EventPage, summary="The run's event log after a seq"
)
def run_events(
    request: HttpRequest,
    run_id: int,
    after: int = Query(0, ge=0),
    limit: int = Query(500, ge=1, le=1000),
):
    """JSON pages of the log; with `Accept: text/event-stream`, server-sent events instead:
    the log after `after` (or Last-Event-ID), then live events until the run's result."""
    run = selectors.run_get(user=request.user, run_id=run_id)
    if "text/event-stream" in request.headers.get("Accept", ""):
        from agents_app.feeds import parse_after
        from agents_app.sse import event_stream_response

        last_event_id = request.headers.get("Last-Event-ID")
        return event_stream_response(run.pk, parse_after(last_event_id) if last_event_id else after)
    events = selectors.run_events(run=run, after=after, limit=limit + 1)
    has_more = len(events) > limit
    events = events[:limit]
    return {
        "run_id": run.pk,
        "status": run.status,
        "events": events,
        "last_seq": events[-1].seq if events else after,
        "has_more": has_more,
    }


@router.post(
    "/runs/{int:run_id}/restart", response={201: RunSummary}, summary="Restart a finished run"
)
def restart_run(request: HttpRequest, run_id: int):
    """A new attempt of the run's task (201). 409 while the run is still going."""
    run = selectors.run_get(user=request.user, run_id=run_id)
    new_run = services.run_restart(run=run, actor=request.user, interface=AuditInterface.API)
    return Status(201, summary(new_run))


@router.post("/runs/{int:run_id}/cancel", response=RunSummary, summary="Cancel a run")
def cancel_run(request: HttpRequest, run_id: int):
    """Stops the run at its next checkpoint: no new LLM or tool call starts. 409 if finished."""
    run = selectors.run_get(user=request.user, run_id=run_id)
    return summary(services.run_cancel(run=run, actor=request.user, interface=AuditInterface.API))


@router.get(
    "/health", auth=None, response={200: dict, 503: dict}, tags=["system"], summary="Health"
)
def health(request: HttpRequest):
    """database and redis must answer (else 503); a worker and an LLM make it `healthy`."""
    from agents_app.health import health as check

    status, body = check()
    return Status(status, body)
