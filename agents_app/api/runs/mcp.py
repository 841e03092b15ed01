"""The MCP server's run tools: submit a task, read and list runs, cancel, restart and fork one,
and compare two. The
same services, selectors and presenters as /api/v1/runs, as the key's user; the structured
outputs are the REST shapes without REST's `success` flag (MCP has `isError`). Importing this
module registers them on `api.mcp_server.server`."""

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp_types import ToolAnnotations
from ninja import Schema
from pydantic import Field

from agents_app.api.mcp_server import READ_ONLY, caller, in_django, tool
from agents_app.api.pagination import page_of
from agents_app.api.runs.schemas import (
    PLANNING,
    VERIFYING,
    ConnectionName,
    RerunTools,
    RunDetail,
    RunDiffOut,
    RunLinks,
    RunSummary,
)
from agents_app.api.schemas import Count, Flag, Id, JsonObject, NonBlankText, Page, PageSize
from agents_app.core.inputs import QUERY_INT_MAX
from agents_app.models import AuditInterface, ClosePolicy, RunStatus
from agents_app.runs import presenters, services
from agents_app.runs import selectors as run_selectors
from agents_app.runs.diff import run_diff, run_diff_out
from agents_app.runs.forks import run_fork
from agents_app.runs.presenters import (
    plan_out,
    plan_replacements_out,
    run_links,
    run_summary,
)
from agents_app.runs.replays import run_replay


class SubmittedRun(Schema):
    run_id: int
    status: str
    links: RunLinks


class RunWithResult(RunDetail):
    result: dict[str, Any] | None = Field(
        description="Seed 000's AgentResult once the run has finished, else null."
    )


class RunList(Schema):
    count: int
    page: int
    page_size: int
    results: list[RunSummary]


RunId = Annotated[Id, Field(description="The run's id (run_id from submit_task or list_runs).")]


@tool(annotations=ToolAnnotations(destructive_hint=False, open_world_hint=True))
async def submit_task(
    ctx: Context,
    task: Annotated[NonBlankText, Field(description="What the agent should do.")],
    context: Annotated[
        JsonObject | None, Field(description="Any JSON object the agent may use, < 1 MB.")
    ] = None,
    max_tokens: Annotated[Count | None, Field(description="LLM token budget of the run.")] = None,
    max_tool_calls: Annotated[Count | None, Field(description="Tool call budget.")] = None,
    connection: Annotated[
        ConnectionName | None,
        Field(
            description="The LLM connection to run on: its id or name (GET /api/v1/connections); "
            "null: the default. It executes the steps, and plans and verifies unless named "
            "below."
        ),
    ] = None,
    planning_connection: Annotated[ConnectionName | None, Field(description=PLANNING)] = None,
    verifying_connection: Annotated[ConnectionName | None, Field(description=VERIFYING)] = None,
    team: Annotated[
        Flag,
        Field(
            description="Use the team: a head node splits the task into subtasks, each done "
            "by an agent profile's child run."
        ),
    ] = False,
    close_policy: Annotated[
        ClosePolicy | None,
        Field(
            description="When the run ends before its children: cancel them (cancel, the "
            "default) or let them finish (finish)."
        ),
    ] = None,
) -> SubmittedRun:
    """Queue a task for an agent (or, with `team`, for a team of agents). Returns the new
    run's id, status (queued) and links; follow it with get_run."""

    def submit(user: Any) -> SubmittedRun:
        run = services.task_submit(
            owner=user,
            interface=AuditInterface.MCP,
            text=task,
            context=context,
            max_tokens=max_tokens,
            max_tool_calls=max_tool_calls,
            connection=connection,
            planning_connection=planning_connection,
            verifying_connection=verifying_connection,
            team=team,
            close_policy=close_policy,
        )
        return SubmittedRun(run_id=run.pk, status=run.status, links=run_links(run))

    return await in_django(submit, caller(ctx))


@tool(annotations=READ_ONLY)
async def get_run(ctx: Context, run_id: RunId) -> RunWithResult:
    """One of your runs with its plans, steps and tool calls, and the AgentResult once it
    has finished."""

    def detail(user: Any) -> RunWithResult:
        run = run_selectors.run_detail(user=user, run_id=run_id)
        return RunWithResult.model_validate(
            {
                **run_summary(run),
                "context": run.task.context,
                "plans": [plan_out(plan) for plan in run.plan_list],
                "plan_replacements": plan_replacements_out(run),
                "result": presenters.agent_result(run) if run.is_terminal else None,
            }
        )

    return await in_django(detail, caller(ctx))


@tool(annotations=READ_ONLY)
async def list_runs(
    ctx: Context,
    status: Annotated[RunStatus | None, Field(description="Only runs with this status.")] = None,
    page: Page = 1,
    page_size: Annotated[PageSize, Field(description="Runs per page.")] = 20,
) -> RunList:
    """Your runs, newest first, optionally only those with one status."""

    def page_of_runs(user: Any) -> RunList:
        runs = run_selectors.runs_for(user)
        if status:
            runs = runs.filter(status=status)
        return RunList.model_validate(page_of(runs, page, page_size, run_summary))

    return await in_django(page_of_runs, caller(ctx))


@tool(annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=True))
async def cancel_run(ctx: Context, run_id: RunId) -> RunSummary:
    """Stop one of your runs: no new LLM or tool call starts. CONFLICT if it already finished."""

    def cancel(user: Any) -> RunSummary:
        run = run_selectors.run_get(user=user, run_id=run_id)
        cancelled = services.run_cancel(run=run, actor=user, interface=AuditInterface.MCP)
        return RunSummary.model_validate(run_summary(cancelled))

    return await in_django(cancel, caller(ctx))


@tool(annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=False))
async def restart_run(ctx: Context, run_id: RunId) -> RunSummary:
    """A new attempt of a finished run's task, queued; returns the new run. CONFLICT while
    the run is still going."""

    def restart(user: Any) -> RunSummary:
        run = run_selectors.run_get(user=user, run_id=run_id)
        new_run = services.run_restart(run=run, actor=user, interface=AuditInterface.MCP)
        return RunSummary.model_validate(run_summary(new_run))

    return await in_django(restart, caller(ctx))


@tool(annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=False))
async def replay_run(
    ctx: Context,
    run_id: RunId,
    rerun: Annotated[
        RerunTools | None,
        Field(
            description="The MCP and network tools to call again; by default their recorded "
            "results answer them."
        ),
    ] = None,
) -> RunSummary:
    """A finished run played again from its recorded model answers (no model is asked), its
    tools run again in a fresh workspace; returns the replay, queued (its `origin` says where
    it diverged from its source). CONFLICT while the run is still going or for a run recorded
    before model answers were kept."""

    def replay(user: Any) -> RunSummary:
        run = run_selectors.run_get(user=user, run_id=run_id)
        new_run = run_replay(run=run, actor=user, interface=AuditInterface.MCP, rerun=rerun)
        return RunSummary.model_validate(run_summary(new_run))

    return await in_django(replay, caller(ctx))


@tool(annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=False))
async def fork_run(
    ctx: Context,
    run_id: RunId,
    after_step: Annotated[
        int,
        Field(
            ge=-QUERY_INT_MAX,
            le=QUERY_INT_MAX,
            description="Go on after this completed step (1 is the first, as the run page "
            "numbers them).",
        ),
    ],
    plan_version: Annotated[
        int | None,
        Field(
            ge=-QUERY_INT_MAX,
            le=QUERY_INT_MAX,
            description="The plan version the step is numbered in; null: the latest.",
        ),
    ] = None,
    steps: Annotated[
        list[str] | None,
        Field(
            description="The remaining steps' objectives instead of the source's; null: as planned."
        ),
    ] = None,
    instruction: Annotated[
        str | None, Field(description="Added to the input of every step the fork runs.")
    ] = None,
    connection: Annotated[
        ConnectionName | None,
        Field(description="The LLM connection (id or name) to run on; null: the source's."),
    ] = None,
) -> RunSummary:
    """Fork one of your finished runs after one of its completed steps: a new run of its task
    whose steps up to there are copied (not run again), its files rebuilt as they were then,
    that goes on from the next step, optionally with the remaining steps edited, an extra
    instruction or another LLM connection. Returns the new run. NOT_FOUND for another
    person's run, VALIDATION_ERROR for a step that is not a completed one or an unknown
    connection, CONFLICT while the run is still going."""

    def fork(user: Any) -> RunSummary:
        new_run = run_fork(
            user=user,
            run_id=run_id,
            after_step=after_step,
            plan_version=plan_version,
            steps=steps,
            instruction=instruction,
            connection=connection,
            actor=user,
            interface=AuditInterface.MCP,
        )
        return RunSummary.model_validate(run_summary(new_run))

    return await in_django(fork, caller(ctx))


@tool(annotations=READ_ONLY)
async def diff_runs(
    ctx: Context,
    run_id: RunId,
    other_run_id: Annotated[Id, Field(description="The run to compare it with.")],
) -> RunDiffOut:
    """Two of your runs side by side (two attempts of a task, a fork and its source, a run and
    its replay): plans step by step, each step's calls and results, files, tokens, time and
    outcome, and `first_divergence`, where they first part (null when they agree)."""

    def compare(user: Any) -> RunDiffOut:
        a, b, diff, extra = run_diff(user=user, a_id=run_id, b_id=other_run_id)
        return RunDiffOut.model_validate(run_diff_out(a, b, diff, extra))

    return await in_django(compare, caller(ctx))
