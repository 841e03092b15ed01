"""GET /api/v1/tools: every registered tool with its schema, capabilities and domain."""

from typing import Any

from django.http import HttpRequest
from ninja import Router, Schema

from tools_app.process_registry import get_registry
from tools_app.selectors import tool_catalog

router = Router(tags=["tools"])


class ToolList(Schema):
    success: bool = True
    tools: list[dict[str, Any]]


@router.get("/tools", response=ToolList, summary="List available tools")
def list_tools(request: HttpRequest, capability: str | None = None, domain: str | None = None):
    """Builtin and MCP tools with schema, capabilities, domain, approval level and, for MCP
    tools, their server's status; or those with a capability / in a domain (seed 000)."""
    found = tool_catalog(get_registry(), user=request.user, capability=capability, domain=domain)
    return {"tools": found}
