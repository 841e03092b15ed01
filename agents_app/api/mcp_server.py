"""AgentDesk as an MCP server: submit tasks and follow runs over streamable HTTP at `/mcp`.

The same API keys as REST (`Authorization: Bearer adk_...`), the same services and selectors,
the same REST shapes as structured output, and every DomainError as an `is_error` tool result
carrying seed 000's error envelope. Each tool sees only the key owner's runs.

A chat client can also answer the calls that wait for a person: `list_approvals` and
`decide_approval`, with the same rules as REST (owner or staff, the first decision wins).

Stateless and JSON-only: a request carries everything it needs (no Mcp-Session-Id, no SSE
stream to resume), so any daphne process behind a load balancer can answer any request.

This module holds the server and how a tool reaches Django (`tool`, `caller`, `in_django`,
the error mapping); each domain's tools sit beside its REST routes, in `api/<domain>/mcp.py`
(runs, approvals, tools, conversations, agents), and use the same shapes and presenters, never
the REST routes; `mcp_http` is the endpoint in front of Django and registers them.
"""

import inspect
import json
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from channels.db import database_sync_to_async
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ValidationError

from agents_app.api.errors import error_body
from agents_app.core.errors import DomainError, ErrorCode

logger = logging.getLogger(__name__)
# A session manager starts and stops with every request here (see session_manager()); its
# INFO lines about that would be two log lines per request saying nothing.
logging.getLogger("mcp.server.streamable_http_manager").setLevel(logging.WARNING)
logging.getLogger("mcp.server.streamable_http").setLevel(logging.WARNING)

MCP_PATH = "/mcp"
SCOPE_USER = "user"
T = TypeVar("T")
# The annotation of every tool that only reads.
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


# Structured outputs: the REST shapes, without REST's `success` flag (MCP has `isError`).


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
        "poll get_run until its status is succeeded, failed or cancelled, then read `result`. "
        "Or converse: create_conversation, send_message, then read_conversation after the last "
        "seq you hold until its running_answer is null. Or hand a contract agent a goal: "
        "create_agent, start_agent, then agent_status until it is no longer running and "
        "read_agent_log."
    ),
)


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


# ASGI: the auth layer, the MCP endpoint and the path dispatcher in front of Django.
