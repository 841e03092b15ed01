"""REST endpoints for tasks and runs: Schema in, service or selector, Schema out."""

import time

from django.conf import settings
from django.http import HttpRequest
from ninja import Query, Router, Status

from agents_app.api.auth import caller_or_none
from agents_app.api.errors import error_response
from agents_app.api.health import health as check
from agents_app.api.pagination import page_of
from agents_app.api.runs.schemas import (
    Accepted,
    EventPage,
    ForkIn,
    ReplayIn,
    RunDetail,
    RunDiffOut,
    RunListQuery,
    RunPage,
    RunSummary,
    TaskIn,
)
from agents_app.api.schemas import errors
from agents_app.core.errors import ERROR_STATUS, ErrorCode
from agents_app.core.inputs import QUERY_INT_MAX
from agents_app.models import TERMINAL_STATUSES, AuditInterface, Run, RunStatus
from agents_app.runs import listing, presenters, selectors, services
from agents_app.runs.diff import run_diff, run_diff_out
from agents_app.runs.forks import run_fork
from agents_app.runs.presenters import (
    plan_out,
    plan_replacements_out,
    run_links,
    run_summary,
)
from agents_app.runs.replays import run_replay
from agents_app.streaming.feeds import parse_after
from agents_app.streaming.sse import event_stream_response

router = Router(tags=["runs"])

WAIT_POLL_SECONDS = 0.2


# With `wait`, a run that failed answers its own error's status (finished_response).
RUN_ERROR_STATUSES = sorted({*ERROR_STATUS.values(), 409})


@router.post(
    "/agent/task",
    response={200: dict, 202: Accepted, **errors(*RUN_ERROR_STATUSES)},
    summary="Submit a task",
)
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
        fast_path=payload.fast_path,
        connection=payload.connection,
        planning_connection=payload.planning_connection,
        verifying_connection=payload.verifying_connection,
        team=payload.team,
        close_policy=payload.close_policy,
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
    return Status(202, {"run_id": run.pk, "status": run.status, "links": run_links(run)})


def finished_response(request: HttpRequest, run: Run):
    result = presenters.agent_result(run)
    if run.status == RunStatus.SUCCEEDED:
        return Status(200, {"success": True, "result": result})
    code = run.error_code or ErrorCode.INTERNAL_ERROR
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
    """Your runs, searched (`q`), filtered (`status`, `kind`) and sorted (`sort`) as on the
    dashboard (whose default view is `kind=listed`); an unknown status, kind or sort, or a bad
    page, is a 400 VALIDATION_ERROR naming it."""
    runs = listing.runs_search(
        user=request.user, q=query.q, status=query.status, sort=query.sort, kind=query.kind
    )
    return page_of(runs, query.page, query.page_size, run_summary)


@router.get(
    "/runs/{int:run_id}", response=RunDetail, summary="A run with its plans, steps and tool calls"
)
def get_run(request: HttpRequest, run_id: int):
    run = selectors.run_detail(user=request.user, run_id=run_id)
    return {
        **run_summary(run),
        "context": run.task.context,
        "plans": [plan_out(p) for p in run.plan_list],
        "plan_replacements": plan_replacements_out(run),
    }


@router.get(
    "/runs/{int:run_id}/events", response=EventPage, summary="The run's event log after a seq"
)
def run_events(
    request: HttpRequest,
    run_id: int,
    after: int = Query(0, ge=0, le=QUERY_INT_MAX),
    limit: int = Query(500, ge=1, le=1000),
):
    """JSON pages of the log; with `Accept: text/event-stream`, server-sent events instead:
    the log after `after` (or Last-Event-ID), then live events until the run's result."""
    run = selectors.run_get(user=request.user, run_id=run_id)
    if "text/event-stream" in request.headers.get("Accept", ""):
        last_event_id = request.headers.get("Last-Event-ID")
        after = parse_after(last_event_id) if last_event_id else after
        return event_stream_response(request, run.pk, after)
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


@router.get(
    "/runs/{int:run_id}/diff/{int:other_id}",
    response=RunDiffOut,
    summary="Two of your runs compared",
)
def diff_runs(request: HttpRequest, run_id: int, other_id: int):
    """The run and another of yours side by side (two attempts of a task, later a fork and its
    source or a run and its replay): their current plans step by step, each step's calls and
    results, the files each left, tokens, time and outcome, and the first point where they
    part (`first_divergence`, null when they agree). Another person's run is 404."""
    a, b, diff, extra = run_diff(user=request.user, a_id=run_id, b_id=other_id)
    return run_diff_out(a, b, diff, extra)


@router.post(
    "/runs/{int:run_id}/restart",
    response={201: RunSummary, **errors(409, 503)},
    summary="Restart a finished run",
)
def restart_run(request: HttpRequest, run_id: int):
    """A new attempt of the run's task (201). 409 while the run is still going."""
    run = selectors.run_get(user=request.user, run_id=run_id)
    new_run = services.run_restart(run=run, actor=request.user, interface=AuditInterface.API)
    return Status(201, run_summary(new_run))


@router.post(
    "/runs/{int:run_id}/replay",
    response={201: RunSummary, **errors(400, 409, 503)},
    summary="Replay a finished run",
)
def replay_run(request: HttpRequest, run_id: int, payload: ReplayIn | None = None):
    """The run played again from its recorded model answers (no model is asked), its tools
    run again in a fresh workspace; MCP and network tools are answered from the record unless
    named in `rerun` (201, the replay; its `origin` says where it diverged). 409 while the run
    is still going, for a kind not replayed on its own, or for a run recorded before model
    answers were kept; 503 while the kill switch is engaged."""
    run = selectors.run_get(user=request.user, run_id=run_id)
    replay = run_replay(
        run=run,
        actor=request.user,
        interface=AuditInterface.API,
        rerun=payload.rerun if payload is not None else None,
    )
    return Status(201, run_summary(replay))


@router.post(
    "/runs/{int:run_id}/fork",
    response={201: RunSummary, **errors(409, 429, 503)},
    summary="Fork a finished run after one of its steps",
)
def fork_run(request: HttpRequest, run_id: int, payload: ForkIn):
    """A new run of the run's task that goes on after its completed step `after_step` (201):
    the steps up to it are copied, not run again, and its files are rebuilt as they were
    then; optionally with the remaining steps edited, an extra instruction, or another LLM
    connection. 400 for a step that is not a completed step of the plan version or an
    unknown connection, 404 for another person's run, 409 while the run is still going, for
    a kind not forked on its own, or where its files after the step cannot be rebuilt."""
    new_run = run_fork(
        user=request.user,
        run_id=run_id,
        after_step=payload.after_step,
        plan_version=payload.plan_version,
        steps=payload.steps,
        instruction=payload.instruction,
        connection=payload.connection,
        actor=request.user,
        interface=AuditInterface.API,
    )
    return Status(201, run_summary(new_run))


@router.post(
    "/runs/{int:run_id}/cancel", response={200: RunSummary, **errors(409)}, summary="Cancel a run"
)
def cancel_run(request: HttpRequest, run_id: int):
    """Stops the run at its next checkpoint: no new LLM or tool call starts. 409 if finished."""
    run = selectors.run_get(user=request.user, run_id=run_id)
    return run_summary(
        services.run_cancel(run=run, actor=request.user, interface=AuditInterface.API)
    )


@router.post(
    "/runs/{int:run_id}/pause", response={200: RunSummary, **errors(409)}, summary="Pause a run"
)
def pause_run(request: HttpRequest, run_id: int):
    """Parks the run at its next step boundary (a queued one, or a head node waiting for its
    children, at once) until it is resumed; a team's children pause too. 409 if finished."""
    run = selectors.run_get(user=request.user, run_id=run_id)
    return run_summary(
        services.run_pause(run=run, actor=request.user, interface=AuditInterface.API)
    )


@router.post(
    "/runs/{int:run_id}/resume", response={200: RunSummary, **errors(409)}, summary="Resume a run"
)
def resume_run(request: HttpRequest, run_id: int):
    """Lets a paused run go on from where it stopped, with its paused children. 409 unless
    it was paused."""
    run = selectors.run_get(user=request.user, run_id=run_id)
    return run_summary(
        services.run_resume(run=run, actor=request.user, interface=AuditInterface.API)
    )


@router.get(
    "/health", auth=None, response={200: dict, 503: dict}, tags=["system"], summary="Health"
)
def health(request: HttpRequest):
    """database and redis must answer (else 503); a worker, an LLM that answers and no broken
    MCP server make it `healthy`, else `degraded`. States only; staff also get `details`."""
    caller = caller_or_none(request)
    status, body = check(staff=bool(caller is not None and caller.is_staff))
    return Status(status, body)
