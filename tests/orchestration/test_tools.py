"""The tool names a profile may list: the builtin ones and those MCP servers offered."""

import pytest

from agents_app.orchestration.tools import tool_names_known
from tools_app.models import MCPServer, Tool, ToolSource


@pytest.fixture
def mcp_tool(db):
    server = MCPServer.objects.create(name="docs", command="docs-server")
    return Tool.objects.create(
        name="docs.search", source=ToolSource.MCP, server=server, enabled=False
    )


def test_builtin_and_discovered_mcp_tools_are_known_even_when_disabled(mcp_tool):
    known = tool_names_known()

    assert {"read_file", "write_file", "http_get", "finish_task", "docs.search"} <= set(known)
    assert known == sorted(known)
