"""The MCP SDK's client against our /mcp endpoint: one connection, handshake and operation per
call, as a real MCP client would."""

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

T = TypeVar("T")


def innermost(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


class McpClient:
    """Each call opens a connection, runs the initialize handshake and one operation."""

    def __init__(self, url: str, key: str | None):
        self.url = f"{url}/mcp"
        self.headers = {"Authorization": f"Bearer {key}"} if key else {}

    def session(self, operation: Callable[[ClientSession], Awaitable[T]]) -> T:
        async def run() -> T:
            async with (
                httpx2.AsyncClient(headers=self.headers, timeout=15) as http,
                streamable_http_client(self.url, http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await operation(session)

        try:
            return anyio.run(run)
        except BaseExceptionGroup as group:
            # The SDK's task groups wrap a failed request; tests want the one error inside.
            raise innermost(group) from group

    def call(self, tool: str, arguments: dict[str, Any] | None = None):
        return self.session(lambda s: s.call_tool(tool, arguments or {}))

    def list_tools(self):
        return self.session(lambda s: s.list_tools())
