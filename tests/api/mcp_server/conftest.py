"""A real daphne serving config.asgi with the MCP endpoint, shared by the whole package, and the
personas' MCP clients of it (`<persona>_mcp`, see tests/support/personas.py)."""

import pytest

from tests.support.clients import make_api_key
from tests.support.mcp_client import McpClient
from tests.support.web import WebServer

# Submission needs an LLM configured; no worker runs, so nothing ever calls it.
LLM_ENV = {"LLM_BASE_URL": "http://127.0.0.1:9/v1", "LLM_MODEL": "scripted"}


@pytest.fixture(scope="package")
def web(django_db_setup, tmp_path_factory):
    server = WebServer(tmp_path_factory.mktemp("mcp-web"), **LLM_ENV).start()
    yield server
    server.stop()


@pytest.fixture
def owner_key(owner, transactional_db) -> str:
    return make_api_key(owner, name="mcp")


@pytest.fixture
def outsider_key(outsider, transactional_db) -> str:
    return make_api_key(outsider, name="mcp")


@pytest.fixture
def owner_mcp(web, owner_key) -> McpClient:
    return McpClient(web.url, owner_key)


@pytest.fixture
def outsider_mcp(web, outsider_key) -> McpClient:
    return McpClient(web.url, outsider_key)
