"""Reads of the tool catalogue: what the code and the servers offer, as staff configured it."""

from dataclasses import replace
from typing import Any

from agents_app.core.prepared import Prepared
from tools_app.models import Tool, ToolSource
from tools_app.registry import ToolRegistry, ToolSpec

# Read at every run's start: compiled once (core.prepared).
_TOOLS = Prepared(lambda: Tool.objects.all(), samples=())


def configured_specs(registry: ToolRegistry) -> list[ToolSpec]:
    """The registry's tools with staff's edits applied (capabilities, domain, approval level)
    and the tools staff disabled left out, as are MCP tools changed since their pin (until
    staff approve the new version, no model is offered them: tools_app.mcp.pins). A tool
    without a row yet is taken as registered."""
    rows = {row.name: row for row in _TOOLS.rows()}
    specs = []
    for tool in registry.all():
        row = rows.get(tool.spec.name)
        if row is None:
            specs.append(tool.spec)
        elif row.enabled and not row.needs_review:
            specs.append(
                replace(
                    tool.spec,
                    capabilities=frozenset(row.capabilities) or tool.spec.capabilities,
                    domain=row.domain or tool.spec.domain,
                    approval_level=row.effective_approval_level,
                    side_effects=row.side_effects or tool.spec.side_effects,
                    waits=row.waits or tool.spec.waits,
                )
            )
    return specs


def tool_catalog(
    registry: ToolRegistry,
    *,
    user: Any,
    capability: str | None = None,
    domain: str | None = None,
) -> list[dict[str, Any]]:
    """Every usable tool for people and clients: the builtin ones from the code, and the MCP
    tools the workers discovered (from their rows, with their server's status). A server's
    last error is staff's to read; others get "" (it may quote the server's output). An MCP
    tool changed since its pin is listed to staff only, with its pin saying so."""
    staff = bool(getattr(user, "is_staff", False))
    builtin = [
        {**spec.as_dict(), "server": None}
        for spec in configured_specs(registry)
        if spec.source == ToolSource.BUILTIN
    ]
    remote = [
        {
            **row.tool_spec().as_dict(),
            "server": {
                "name": row.server.name,
                "status": row.server.status,
                "last_error": row.server.last_error if staff else "",
            },
            "pin": {"status": row.pin_status, "sha256": row.pinned_sha256},
        }
        for row in Tool.objects.filter(
            source=ToolSource.MCP, enabled=True, server__enabled=True
        ).select_related("server")
        if staff or not row.needs_review
    ]
    tools = sorted(builtin + remote, key=lambda t: t["name"])
    if capability:
        tools = [t for t in tools if capability.upper() in t["capabilities"]]
    if domain:
        tools = [t for t in tools if t["domain"] == domain]
    return tools
