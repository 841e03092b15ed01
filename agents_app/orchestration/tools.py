"""The tool names a profile may allow or exclude: the registry's builtin tools and every tool
a worker discovered on an MCP server (its row), enabled or not, since staff may enable it later."""

from tools_app.models import Tool
from tools_app.process_registry import get_registry


def tool_names_known() -> list[str]:
    """Every tool name there is, sorted."""
    names = set(get_registry().names()) | set(Tool.objects.values_list("name", flat=True))
    return sorted(names)
