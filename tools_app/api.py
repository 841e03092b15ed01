"""GET /api/v1/tools: every registered tool with its schema, capabilities and domain."""

from typing import Any

from django.http import HttpRequest
from ninja import Router, Schema

from tools_app.registry import get_registry

router = Router(tags=["tools"])


class ToolList(Schema):
    success: bool = True
    tools: list[dict[str, Any]]


@router.get("/tools", response=ToolList, summary="List available tools")
def list_tools(request: HttpRequest, capability: str | None = None, domain: str | None = None):
    """All tools, or those with a capability / in a domain (seed 000 discovery)."""
    registry = get_registry()
    tools = registry.all()
    if capability:
        tools = [t for t in registry.for_capabilities([capability])]
    if domain:
        tools = [t for t in tools if t.spec.domain == domain]
    return {"tools": [t.spec.as_dict() for t in tools]}
