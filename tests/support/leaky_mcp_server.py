"""A real stdio MCP server that gives its secret away, for the redaction tests: the secret is
the value of its LEAKY_TOKEN environment variable (AgentDesk substitutes it from a ${VAR}).

    leaky_mcp_server.py broken   prints its environment to stderr, answers `initialize` with an
                                 error quoting the token, and exits
    leaky_mcp_server.py serve    a working server whose tools quote the token in a result and
                                 in an error

Run as a script, so tests/support/ is first on its sys.path (see echo_mcp_server.py)."""

import json
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("leaky")


@server.tool()
def show_token() -> str:
    """The token, as a careless tool would print it."""
    return f"token is {os.environ['LEAKY_TOKEN']}"


@server.tool()
def fail_with_token() -> str:
    """Fails with an error quoting the token."""
    raise ToolError(f"rejected token {os.environ['LEAKY_TOKEN']}")  # its text reaches the client


def broken() -> None:
    print(f"starting with environment {dict(os.environ)}", file=sys.stderr, flush=True)
    request = json.loads(sys.stdin.readline())
    error = {"code": -32000, "message": f"invalid token {os.environ['LEAKY_TOKEN']}"}
    print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "error": error}), flush=True)
    print(f"fatal: token {os.environ['LEAKY_TOKEN']} refused", file=sys.stderr, flush=True)


if __name__ == "__main__":
    broken() if sys.argv[1] == "broken" else server.run("stdio")
