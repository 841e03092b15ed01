"""The MCP server's approval tools: list the calls (and plans) that wait for the key's user and
decide one, with the same rules, selectors and presenter as /api/v1/approvals (owner or staff,
the first decision wins). Importing this module registers them on `api.mcp_server.server`."""

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp_types import ToolAnnotations
from ninja import Schema
from pydantic import Field

from agents_app.api.approvals.schemas import ApprovalOut
from agents_app.api.mcp_server import READ_ONLY, caller, in_django, tool
from agents_app.api.pagination import page_of
from agents_app.api.schemas import Id, JsonObject, Page, PageSize
from agents_app.approvals import decisions
from agents_app.approvals import selectors as approval_selectors
from agents_app.approvals.presenters import approval_payload
from agents_app.models import ApprovalStatus, AuditInterface, Decision, Remember


class ApprovalList(Schema):
    count: int
    page: int
    page_size: int
    results: list[ApprovalOut]


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
        Field(
            description='approve only: "tool" allows the tool from now on, "call" this call, '
            '"host" the tool\'s calls to the one host this call reaches (also when its '
            "arguments came from a tool's output: see `taint`)."
        ),
    ] = Remember.NOTHING,
    note: Annotated[
        str,
        Field(
            max_length=2_000,
            description="a plan only: with deny, what is wrong with it (the planner makes a "
            "new plan with it); with modify, why it was edited (the verifier reads it).",
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
