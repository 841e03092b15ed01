"""What a tool answers is stored whatever it holds: a NUL or a lone surrogate from an MCP server
becomes U+FFFD (PostgreSQL refuses both in text and jsonb; SQLite's driver the surrogate)."""

from pathlib import Path

from tests.support.tools import OddTextTool
from tools_app.registry import ToolContext, ToolRegistry


def test_a_tool_result_holding_nul_or_a_lone_surrogate_comes_back_storable():
    registry = ToolRegistry()
    registry.register(OddTextTool())

    result = registry.call("odd_text", {}, ToolContext(1, Path("/nonexistent"), 5.0))

    assert result.ok
    assert result.content == {"text\ufffd": ["a\ufffdb", "c\ufffdd", 1.5]}
