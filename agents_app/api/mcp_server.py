"""AgentDesk as an MCP server: submit tasks and follow runs over streamable HTTP at `/mcp`.

The same API keys as REST (`Authorization: Bearer adk_...`), the same services and selectors,
the same REST shapes as structured output, and every DomainError as an `is_error` tool result
carrying seed 000's error envelope. Each tool sees only the key owner's runs.

A chat client can also answer the calls that wait for a person: `list_approvals` and
`decide_approval`, with the same rules as REST (owner or staff, the first decision wins).

Stateless and JSON-only: a request carries everything it needs (no Mcp-Session-Id, no SSE
stream to resume), so any daphne process behind a load balancer can answer any request.
"""

import inspect
import json
import logging
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from asgiref.sync import ThreadSensitiveContext
from channels.db import database_sync_to_async
from django.conf import settings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from ninja import Schema
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.responses import JSONResponse

from agents_app.api.approvals import ApprovalOut
from agents_app.api.errors import error_body
from agents_app.api.pagination import page_of
from agents_app.api.schemas import RunDetail, RunLinks, RunSummary
from agents_app.approvals import decisions
from agents_app.approvals import selectors as approval_selectors
from agents_app.approvals.presenters import approval_payload
from agents_app.core.api_keys import user_for_api_key
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.models import ApprovalStatus, AuditInterface, Decision, Remember, RunStatus
from agents_app.runs import presenters, services
from agents_app.runs import selectors as run_selectors
from agents_app.runs.presenters import plan_out, run_links, run_summary
from tools_app.process_registry import get_registry
from tools_app.selectors import tool_catalog

logger = logging.getLogger(__name__)
# A session manager starts and stops with every request here (see session_manager()); its
# INFO lines about that would be two log lines per request saying nothing.
logging.getLogger("mcp.server.streamable_http_manager").setLevel(logging.WARNING)
logging.getLogger("mcp.server.streamable_http").setLevel(logging.WARNING)

MCP_PATH = "/mcp"
SCOPE_USER = "user"
T = TypeVar("T")


# Structured outputs: the REST shapes, without REST's `success` flag (MCP has `isError`).


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
    last_error: str


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


class AgentDeskMCP(MCPServer):
    """Maps every tool failure once to seed 000's envelope, as config/api.py does for REST."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> Any:
        names = sorted(tool.name for tool in await self.list_tools())
        if name not in names:
            return error_result(
                DomainError(
                    ErrorCode.TOOL_NOT_FOUND,
                    f"Tool '{name}' not available",
                    {"requested_tool": name, "available_tools": names},
                )
            )
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            # The SDK wraps whatever the tool raised; __cause__ is the original. A plain
            # ToolError over a ValidationError is the arguments failing the input schema; an
            # UnexpectedToolError over one is our own output failing its model: a bug.
            cause = exc.__cause__
            if isinstance(cause, DomainError):
                return error_result(cause)
            if isinstance(cause, ValidationError) and not isinstance(exc, UnexpectedToolError):
                return error_result(arguments_error(cause))
            body = error_body(
                ErrorCode.INTERNAL_ERROR,
                "An unexpected error occurred; quote the trace_id to staff",
            )
            logger.error("MCP tool %s failed: %s", name, body["error"]["trace_id"], exc_info=cause)
            return error_result_body(body)


def error_result(error: DomainError) -> CallToolResult:
    return error_result_body(error_body(error.code, error.message, error.details))


def error_result_body(body: dict[str, Any]) -> CallToolResult:
    """The envelope REST answers with, as the text of an `isError` result."""
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(body, ensure_ascii=False, default=str))],
        is_error=True,
    )


def arguments_error(exc: ValidationError) -> DomainError:
    problems = [
        {"field": ".".join(str(p) for p in e["loc"]), "message": e["msg"]} for e in exc.errors()
    ]
    summary_text = "; ".join(f"{p['field'] or 'arguments'}: {p['message']}" for p in problems[:3])
    return DomainError(
        ErrorCode.VALIDATION_ERROR, f"Invalid arguments: {summary_text}", {"errors": problems}
    )


server = AgentDeskMCP(
    "agentdesk",
    title="AgentDesk",
    version="1",
    instructions=(
        "Hand tasks to AgentDesk's agents and follow their runs. submit_task queues a run; "
        "poll get_run until its status is succeeded, failed or cancelled, then read `result`."
    ),
)

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
RunId = Annotated[int, Field(description="The run's id (run_id from submit_task or list_runs).")]


def tool(annotations: ToolAnnotations) -> Callable[[Callable], Callable]:
    """Register an AgentDesk tool; its docstring, dedented, is what clients read."""

    def register(fn: Callable) -> Callable:
        server.add_tool(fn, description=inspect.cleandoc(fn.__doc__ or ""), annotations=annotations)
        return fn

    return register


def caller(ctx: Context) -> Any:
    """The user whose API key the auth layer accepted for this HTTP request."""
    request = ctx.request_context.request
    user = request.scope.get(SCOPE_USER) if request is not None else None
    if user is None:  # only reachable if the app is served without the auth layer
        raise DomainError(ErrorCode.UNAUTHORIZED, "Send 'Authorization: Bearer <API key>'")
    return user


async def in_django(fn: Callable[..., T], *args: Any) -> T:
    """ORM work in Django's thread-sensitive executor, with its connection hygiene."""
    return await database_sync_to_async(fn)(*args)


@tool(annotations=ToolAnnotations(destructive_hint=False, open_world_hint=True))
async def submit_task(
    ctx: Context,
    task: Annotated[str, Field(description="What the agent should do.")],
    context: Annotated[
        dict[str, Any] | None, Field(description="Any JSON object the agent may use, < 1 MB.")
    ] = None,
    max_tokens: Annotated[
        int | None, Field(ge=1, description="LLM token budget of the run.")
    ] = None,
    max_tool_calls: Annotated[int | None, Field(ge=1, description="Tool call budget.")] = None,
) -> SubmittedRun:
    """Queue a task for an agent. Returns the new run's id, status (queued) and links;
    follow it with get_run."""

    def submit(user: Any) -> SubmittedRun:
        run = services.task_submit(
            owner=user,
            interface=AuditInterface.MCP,
            text=task,
            context=context,
            max_tokens=max_tokens,
            max_tool_calls=max_tool_calls,
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
    page: Annotated[int, Field(ge=1, description="1-based page number.")] = 1,
    page_size: Annotated[int, Field(ge=1, le=100, description="Runs per page.")] = 20,
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
    run_id: Annotated[int | None, Field(description="Only this run's approvals.")] = None,
    page: Annotated[int, Field(ge=1, description="1-based page number.")] = 1,
    page_size: Annotated[int, Field(ge=1, le=100, description="Approvals per page.")] = 20,
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
    approval_id: Annotated[int, Field(description="The approval's id, from list_approvals.")],
    decision: Annotated[
        Decision,
        Field(
            description="approve (run the call), modify (run it with `arguments`), skip (the "
            "step), deny (refuse the call; the agent goes on without it), cancel (the run)."
        ),
    ],
    arguments: Annotated[
        dict[str, Any] | None,
        Field(description="modify only: the arguments to run instead; they must fit the tool."),
    ] = None,
    remember: Annotated[
        Remember,
        Field(description='approve only: "tool" allows the tool from now on, "call" this call.'),
    ] = Remember.NOTHING,
) -> ApprovalOut:
    """Decide a call that waits for you; the run goes on at once on any worker. The first
    decision wins: CONFLICT if it was already decided, and nothing runs twice."""

    def decide(user: Any) -> ApprovalOut:
        decided = decisions.approval_decide_as(
            user=user,
            approval_id=approval_id,
            decision=decision,
            arguments=arguments,
            remember=remember,
            interface=AuditInterface.MCP,
        )
        return ApprovalOut.model_validate(approval_payload(decided))

    return await in_django(decide, caller(ctx))


@tool(annotations=READ_ONLY)
async def list_tools(
    ctx: Context,
    capability: Annotated[str | None, Field(description="e.g. FILE_READ")] = None,
    domain: Annotated[str | None, Field(description="e.g. file_operations")] = None,
) -> AgentToolList:
    """The tools AgentDesk's agents can use (not this server's own tools): builtin and from
    MCP servers, with their input schemas; optionally only those with a capability or in a
    domain."""
    caller(ctx)

    def tools() -> AgentToolList:
        found = tool_catalog(get_registry(), capability=capability, domain=domain)
        return AgentToolList.model_validate({"tools": found})

    return await in_django(tools)


# ASGI: the auth layer, the MCP endpoint and the path dispatcher in front of Django.


def session_manager() -> StreamableHTTPSessionManager:
    """A stateless JSON-only manager for one request.

    The SDK's manager needs its `run()` task group entered before it serves, normally from
    an ASGI lifespan, which daphne does not run. Stateless mode keeps nothing between
    requests, so each request enters a manager of its own: no startup hook, no task left
    behind in the event loop, nothing tied to one process or loop."""
    return StreamableHTTPSessionManager(
        # MCPServer has no public accessor for its low-level server; the SDK's own Client
        # reads the same attribute (mcp/client/client.py).
        app=server._lowlevel_server,
        stateless=True,
        json_response=True,
        # Host/Origin checks guard cookie- or network-trusting servers against DNS rebinding;
        # here every request needs a bearer key, which a rebound page does not have.
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
    )


def envelope_response(
    code: str, message: str, details: Any = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    body = error_body(code, message, details)
    return JSONResponse(
        body,
        status_code=body["error"]["http_status"],
        headers={"X-Trace-Id": body["error"]["trace_id"], **(headers or {})},
    )


def bearer_token(scope: dict) -> str:
    headers = dict(scope.get("headers") or [])
    scheme, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


async def mcp_app(scope: dict, receive: Any, send: Any) -> None:
    """The MCP endpoint behind API-key auth; the user goes into the scope for the tools."""
    # Like Django's ASGIHandler: this request's sync work gets a thread of its own instead of
    # queueing behind every other request's in the one process-wide thread.
    async with ThreadSensitiveContext():
        token = bearer_token(scope)
        user = await database_sync_to_async(user_for_api_key)(token) if token else None
        if user is None:
            response = envelope_response(
                ErrorCode.UNAUTHORIZED,
                "Authentication required: send 'Authorization: Bearer <API key>'",
                headers={"WWW-Authenticate": 'Bearer realm="AgentDesk"'},
            )
            await response(scope, receive, send)
            return
        if relative_path(scope) not in (MCP_PATH, MCP_PATH + "/"):
            response = envelope_response(ErrorCode.NOT_FOUND, f"No MCP endpoint at {scope['path']}")
            await response(scope, receive, send)
            return
        if scope["method"] != "POST":
            # Stateless: there is no server-initiated stream to GET (the SDK would hold an
            # empty one open for ever) and no session to DELETE. The spec allows a 405 for both.
            response = envelope_response(
                ErrorCode.METHOD_NOT_ALLOWED,
                f"{scope['method']} is not allowed on {MCP_PATH}; use POST",
                {"method": scope["method"], "allowed_methods": ["POST"]},
                headers={"Allow": "POST"},
            )
            await response(scope, receive, send)
            return
        manager = session_manager()
        async with manager.run():
            await manager.handle_request({**scope, SCOPE_USER: user}, receive, send)


def relative_path(scope: dict) -> str:
    """The path below the root this app is mounted at (daphne --root-path), as Django sees it."""
    path, root = scope.get("path", ""), scope.get("root_path", "")
    return path.removeprefix(root) if root and path.startswith(root) else path


def with_mcp(django_app: Any) -> Callable:
    """HTTP dispatcher: `/mcp` and `/mcp/...` to the MCP endpoint, everything else to Django."""

    async def dispatch(scope: dict, receive: Any, send: Any) -> None:
        path = relative_path(scope)
        if path == MCP_PATH or path.startswith(MCP_PATH + "/"):
            await mcp_app(scope, receive, send)
        else:
            await django_app(scope, receive, send)

    return dispatch
