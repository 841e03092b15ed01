"""A tiny real stdio MCP server for the admin's "Check now" test.

Run as a script, so tests/support/ is first on its sys.path: no module there may take the name
of a standard library module (html, socket, ...), or this server would import it instead."""

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
