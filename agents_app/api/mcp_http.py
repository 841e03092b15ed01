"""The MCP endpoint over HTTP: API-key auth, the `/mcp` path in front of Django, and a
stateless JSON-only session manager per request (so any daphne process answers any request)."""

from collections.abc import Callable
from typing import Any

from asgiref.sync import ThreadSensitiveContext
from channels.db import database_sync_to_async
from django.conf import settings
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse

# Importing a domain's tools registers them; in this order, the order tools/list answers in.
# isort: off
from agents_app.api.agents import mcp as agents_tools  # noqa: F401
from agents_app.api.conversations import mcp as conversations_tools  # noqa: F401
from agents_app.api.runs import mcp as runs_tools  # noqa: F401
from agents_app.api.approvals import mcp as approvals_tools  # noqa: F401
from agents_app.api.tools import mcp as tools_tools  # noqa: F401

# isort: on
from agents_app.api.errors import error_body
from agents_app.api.mcp_server import MCP_PATH, SCOPE_USER, server
from agents_app.core.api_keys import user_for_api_key
from agents_app.core.errors import ErrorCode
from agents_app.core.throttle import Throttled, scope_address
from agents_app.models import AuditInterface


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
        try:
            user = (
                await database_sync_to_async(user_for_api_key)(
                    token, address=scope_address(scope), interface=AuditInterface.MCP
                )
                if token
                else None
            )
        except Throttled as throttled:
            response = envelope_response(
                throttled.code,
                throttled.message,
                throttled.details,
                headers={"Retry-After": str(throttled.retry_after)},
            )
            await response(scope, receive, send)
            return
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
        body = await read_body(scope, receive, settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        if body is None:
            # The SDK's own limit answers this in plain text; clients read the envelope.
            response = envelope_response(
                ErrorCode.PAYLOAD_TOO_LARGE,
                f"The request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes",
                {"max_bytes": settings.DATA_UPLOAD_MAX_MEMORY_SIZE},
            )
            await response(scope, receive, send)
            return
        manager = session_manager()
        async with manager.run():
            await manager.handle_request({**scope, SCOPE_USER: user}, replay(body, receive), send)


async def read_body(scope: dict, receive: Any, limit: int) -> bytes | None:
    """The whole request body, or None once it is over `limit` bytes (declared or sent)."""
    headers = dict(scope.get("headers") or [])
    declared = headers.get(b"content-length", b"")
    if declared.isdigit() and int(declared) > limit:
        return None
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return bytes(body)  # the client went away; the SDK sees an empty request
        body.extend(message.get("body", b""))
        if len(body) > limit:
            return None
        if not message.get("more_body", False):
            return bytes(body)


def replay(body: bytes, receive: Any) -> Callable:
    """A `receive` that hands over the body already read, then the client's next messages."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive_again() -> dict:
        return pending.pop() if pending else await receive()

    return receive_again


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
