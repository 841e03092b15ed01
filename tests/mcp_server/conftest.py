"""A real daphne serving config.asgi with the MCP endpoint, and the SDK's client to drive it."""

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from agents_app.models import ApiKey
from tests.support.web import WebServer

T = TypeVar("T")

# Submission needs an LLM configured; no worker runs, so nothing ever calls it.
LLM_ENV = {"LLM_BASE_URL": "http://127.0.0.1:9/v1", "LLM_MODEL": "scripted"}


@pytest.fixture(scope="package")
def web(django_db_setup, tmp_path_factory):
    server = WebServer(tmp_path_factory.mktemp("mcp-web"), **LLM_ENV).start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def make_key(user) -> str:
    raw = ApiKey.generate()
    key = ApiKey(user=user, name="mcp")
    key.set_key(raw)
    key.save()
    return raw


@pytest.fixture
def owner_key(owner, transactional_db) -> str:
    return make_key(owner)


@pytest.fixture
def outsider_key(outsider, transactional_db) -> str:
    return make_key(outsider)


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


@pytest.fixture
def as_owner(web, owner_key) -> McpClient:
    return McpClient(web.url, owner_key)


@pytest.fixture
def as_outsider(web, outsider_key) -> McpClient:
    return McpClient(web.url, outsider_key)
