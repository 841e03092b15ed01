"""The MCP server's tools: submit and follow runs, decide approvals, list tools. Each calls
the same services, selectors and presenters as REST, as the key's user; the structured outputs
are the REST shapes without REST's `success` flag (MCP has `isError`). Importing this module
registers the tools on `mcp_server.server`."""

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp_types import ToolAnnotations
from ninja import Schema
from pydantic import BaseModel, ConfigDict, Field

from agents_app.api.approvals import ApprovalOut
from agents_app.api.mcp_server import caller, in_django, tool
from agents_app.api.pagination import page_of
from agents_app.api.schemas import (
    Count,
    Flag,
    Id,
    JsonObject,
    NonBlankText,
    Page,
    PageSize,
    RunDetail,
    RunLinks,
    RunSummary,
    Text,
)
from agents_app.approvals import decisions
from agents_app.approvals import selectors as approval_selectors
from agents_app.approvals.presenters import approval_payload
from agents_app.models import (
    ApprovalStatus,
    AuditInterface,
    ClosePolicy,
    Decision,
    Remember,
    RunStatus,
)
from agents_app.runs import presenters, services
from agents_app.runs import selectors as run_selectors
from agents_app.runs.presenters import plan_out, run_links, run_summary
from tools_app.process_registry import get_registry
from tools_app.selectors import tool_catalog


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


class ApprovalList(Schema):
    count: int
    page: int
    page_size: int
    results: list[ApprovalOut]


class ToolServer(BaseModel):
    name: str
    status: str
    last_error: str = Field(description='Why the server is broken; staff only, "" for others.')


class AgentTool(BaseModel):
    # `schema` would shadow BaseModel.schema; the wire name stays REST's "schema".
    model_config = ConfigDict(populate_by_name=True)

    name: str
    description: str
    capabilities: list[str]
    domain: str
    input_schema: dict[str, Any] = Field(alias="schema")
    approval_level: str
    side_effects: str
    timeout: float
    source: str
    server: ToolServer | None = Field(
        default=None, description="For an MCP tool, its server and that server's status."
    )


class AgentToolList(BaseModel):
    tools: list[AgentTool]


READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


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


@tool(annotations=READ_ONLY)
async def list_approvals(
    ctx: Context,
    status: Annotated[
        ApprovalStatus | None, Field(description="Only approvals with this status; null: all.")
    ] = ApprovalStatus.PENDING,
    run_id: Annotated[Id | None, Field(description="Only this run's approvals.")] = None,
    page: Page = 1,
    page_size: Annotated[PageSize, Field(description="Approvals per page.")] = 20,
) -> ApprovalList:
    """The tool calls (and plans) of your runs that wait for your decision, newest first:
    each with its tool, arguments, risk, level and the step's reasoning. Decide one with
    decide_approval."""

    def page_of_approvals(user: Any) -> ApprovalList:
        approvals = approval_selectors.approvals_for(user)  # newest first
        if status:
            approvals = approvals.filter(status=status)
        if run_id is not None:
            approvals = approvals.filter(run_id=run_id)
        return ApprovalList.model_validate(page_of(approvals, page, page_size, approval_payload))

    return await in_django(page_of_approvals, caller(ctx))


@tool(annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=False))
async def decide_approval(
    ctx: Context,
    approval_id: Annotated[Id, Field(description="The approval's id, from list_approvals.")],
    decision: Annotated[
        Decision,
        Field(
            description="approve (run the call), modify (run it with `arguments`), skip (the "
            "step), deny (refuse the call; the agent goes on without it), cancel (the run)."
        ),
    ],
    arguments: Annotated[
        JsonObject | None,
        Field(description="modify only: the arguments to run instead; they must fit the tool."),
    ] = None,
    remember: Annotated[
        Remember,
        Field(description='approve only: "tool" allows the tool from now on, "call" this call.'),
    ] = Remember.NOTHING,
    note: Annotated[
        str,
        Field(
            max_length=2_000,
            description="deny of a plan only: what is wrong with it; the planner makes a new "
            "plan with it.",
        ),
    ] = "",
) -> ApprovalOut:
    """Decide a call (or a plan) that waits for you; the run goes on at once on any worker. A
    plan is approved, modified (`arguments`: {"steps": [{"objective", "tool_names"}, …]}),
    denied with a `note` for the planner, or its run cancelled. The first decision wins:
    CONFLICT if it was already decided, and nothing runs twice."""

    def decide(user: Any) -> ApprovalOut:
        decided = decisions.approval_decide_as(
            user=user,
            approval_id=approval_id,
            decision=decision,
            arguments=arguments,
            remember=remember,
            note=note,
            interface=AuditInterface.MCP,
        )
        return ApprovalOut.model_validate(approval_payload(decided))

    return await in_django(decide, caller(ctx))


@tool(annotations=READ_ONLY)
async def list_tools(
    ctx: Context,
    capability: Annotated[Text | None, Field(description="e.g. FILE_READ")] = None,
    domain: Annotated[Text | None, Field(description="e.g. file_operations")] = None,
) -> AgentToolList:
    """The tools AgentDesk's agents can use (not this server's own tools): builtin and from
    MCP servers, with their input schemas; optionally only those with a capability or in a
    domain."""

    def tools(user: Any) -> AgentToolList:
        found = tool_catalog(get_registry(), user=user, capability=capability, domain=domain)
        return AgentToolList.model_validate({"tools": found})

    return await in_django(tools, caller(ctx))
