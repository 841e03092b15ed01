"""A tiny real stdio MCP server for the admin's "Check now" test."""

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("echo")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
def get_current_time() -> str:
    """The current time, in UTC."""
    return "12:00"


if __name__ == "__main__":
    print("echo server starting", file=sys.stderr)
    server.run("stdio")
