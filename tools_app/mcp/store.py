"""Where the MCP pool writes what it sees: Tool rows, server status, live notices to pages."""

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from django.db import close_old_connections, connection, transaction

from agents_app.core.events import publish
from tools_app.mcp.discovery import sync_server_tools
from tools_app.models import MCPServer, PinStatus, ServerConfigError, ServerStatus, Tool
from tools_app.registry import ToolSpec

MCP_STATUS_GROUP = "mcp.servers"

Result = TypeVar("Result")


def in_own_connection(function: Callable[..., Result]) -> Callable[..., Result]:
    """The pool calls these from short-lived executor threads: never leak their connections."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Result:
        close_old_connections()
        try:
            return function(*args, **kwargs)
        finally:
            connection.close()

    return wrapper


def notify(server_id: int | None = None) -> None:
    """Tell open pages that a server's status changed (they re-render the server panel)."""
    publish(MCP_STATUS_GROUP, [{"type": "mcp.status", "server_id": server_id}])


class DatabaseStore:
    @in_own_connection
    def enabled_servers(self) -> list[tuple[int, Any, Any]]:
        """(id, version, ServerConfig or the error that prevents connecting) per enabled server.
        The version is the resolved configuration itself: any change restarts the session."""
        servers = []
        for server in MCPServer.objects.filter(enabled=True).order_by("name"):
            try:
                config = server.spec()
            except ServerConfigError as exc:
                servers.append((server.pk, ("error", str(exc)), exc))
                continue
            servers.append((server.pk, config, config))
        return servers

    @in_own_connection
    def record_active(
        self, server_id: int, config: Any, tools: list[Any]
    ) -> list[tuple[str, ToolSpec]]:
        """Sync the discovered tools and mark the server active. Returns (remote name, spec) of
        the enabled tools as staff configured them, in their pinned version; a tool changed
        since its pin is left out until staff approve its new version."""
        with transaction.atomic():
            server = MCPServer.objects.get(pk=server_id)
            rows = sync_server_tools(
                server,
                [
                    {
                        "name": t.name,
                        "description": t.description,
                        "input_schema": t.input_schema,
                        "annotations": t.annotations,
                    }
                    for t in tools
                ],
            )
            server.mark(ServerStatus.ACTIVE, tool_count=len(rows))
        notify(server_id)
        return [
            (row.remote_name, row.tool_spec())
            for row in rows
            if row.enabled and not row.needs_review
        ]

    @in_own_connection
    def pin_marks(self) -> dict[int, tuple]:
        """Per server, its tools' names, pins and review states: when they move (staff
        approved a version, a check found a change), the pool registers the tools again."""
        marks: dict[int, list] = {}
        for server_id, *mark in (
            Tool.objects.filter(server__enabled=True)
            .order_by("name")
            .values_list("server_id", "name", "pinned_sha256", "pin_status")
        ):
            marks.setdefault(server_id, []).append(tuple(mark))
        return {server_id: tuple(mark) for server_id, mark in marks.items()}

    @in_own_connection
    def offered_specs(self, server_id: int) -> list[tuple[str, ToolSpec]]:
        """(remote name, spec) of the server's enabled tools in their pinned version, those
        waiting for review left out."""
        rows = Tool.objects.filter(
            server_id=server_id, enabled=True, pin_status=PinStatus.PINNED
        ).select_related("server")
        return [(row.remote_name, row.tool_spec()) for row in rows]

    @in_own_connection
    def record_broken(self, server_id: int, error: str, stderr: str) -> None:
        server = MCPServer.objects.filter(pk=server_id).first()
        if server is not None and server.mark(ServerStatus.BROKEN, error=error, stderr_tail=stderr):
            notify(server_id)
