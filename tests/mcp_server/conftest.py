"""A real daphne serving config.asgi with the MCP endpoint, and the SDK's client to drive it."""

import pytest

from agents_app.models import ApiKey
from tests.support.mcp_client import McpClient
from tests.support.web import WebServer

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


@pytest.fixture
def as_owner(web, owner_key) -> McpClient:
    return McpClient(web.url, owner_key)


@pytest.fixture
def as_outsider(web, outsider_key) -> McpClient:
    return McpClient(web.url, outsider_key)
