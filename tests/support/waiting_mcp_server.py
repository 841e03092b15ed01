"""A tiny real stdio MCP server whose tools wait for something outside the run (`sleep`,
`wait_for_event`, `rest_n_wait`) beside ones that answer at once (`lookup`, `note`): a micro
agent must be offered none of the waiting ones, whatever the server's name.

Run as a script, so tests/support/ is first on its sys.path: no module there may take the name
of a standard library module (html, socket, ...), or this server would import it instead."""

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("timer")


@server.tool()
def sleep(seconds: float) -> str:
    """Sleep for the given number of seconds."""
    return "slept"


@server.tool()
def wait_for_event(name: str) -> str:
    """Block until the named event happens."""
    return name


@server.tool()
def rest_n_wait(minutes: int) -> str:
    """Rest, then wait for the next message."""
    return "rested"


@server.tool()
def lookup(key: str) -> str:
    """Look a key up."""
    return key.upper()


@server.tool()
def note(text: str) -> str:
    """Keep a note (staff may flag it as waiting)."""
    return text


if __name__ == "__main__":
    print("timer server starting", file=sys.stderr)
    server.run("stdio")
