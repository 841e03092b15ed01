"""GET /api/v1/tools (tool discovery) and GET /api/v1/health (no login needed)."""

from datetime import datetime

import pytest

from tests.support.api import assert_error

TOOLS = "/api/v1/tools"
HEALTH = "/api/v1/health"
BUILTIN = {
    "read_file",
    "write_file",
    "list_files",
    "http_get",
    "finish_task",
    "start_micro_agent",
    "run_python",
    "run_command",
    "git",
    "git_commit",
}


def builtin_tools(client, **query) -> dict[str, dict]:
    """The builtin tools in the answer by name; tools registered by other code are left out."""
    response = client.get(TOOLS, query)
    assert response.status_code == 200
    body = response.json()
    assert body["success"] is True
    return {t["name"]: t for t in body["tools"] if t["source"] == "builtin"}


# --- tools --------------------------------------------------------------------------------------


def test_it_lists_the_builtin_tools(owner_api):
    owner_client = owner_api
    assert set(builtin_tools(owner_client)) == BUILTIN


def test_each_tool_comes_with_its_schema_capabilities_and_domain(owner_api):
    tools = builtin_tools(owner_api)

    read_file = tools["read_file"]
    assert read_file["capabilities"] == ["FILE_READ"]
    assert read_file["domain"] == "file_operations"
    assert read_file["schema"]["type"] == "object"
    assert "path" in read_file["schema"]["properties"]
    assert read_file["description"]
    assert {"approval_level", "side_effects", "timeout"} <= set(read_file)
    assert tools["http_get"]["capabilities"] == ["HTTP_GET", "WEB_FETCH"]
    assert tools["finish_task"]["domain"] == "control"
    assert all(t["schema"]["type"] == "object" for t in tools.values())


def test_it_filters_by_capability(owner_api):
    owner_client = owner_api
    assert set(builtin_tools(owner_client, capability="FILE_READ")) == {"read_file", "list_files"}


def test_the_capability_filter_ignores_case(owner_api):
    owner_client = owner_api
    assert set(builtin_tools(owner_client, capability="file_write")) == {"write_file"}


def test_it_filters_by_domain(owner_api):
    owner_client = owner_api
    assert set(builtin_tools(owner_client, domain="web")) == {"http_get"}


def test_it_filters_by_capability_and_domain_together(owner_api):
    owner_client = owner_api
    tools = builtin_tools(owner_client, capability="FILE_READ", domain="file_operations")

    assert set(tools) == {"read_file", "list_files"}
    assert builtin_tools(owner_client, capability="FILE_READ", domain="web") == {}


@pytest.mark.parametrize("query", [{"capability": "TELEPORT"}, {"domain": "nowhere"}])
def test_an_unknown_capability_or_domain_lists_nothing(owner_api, query):
    owner_client = owner_api
    assert builtin_tools(owner_client, **query) == {}


def test_every_persona_sees_the_same_tools(owner_api, outsider_api):
    owner_client = owner_api
    outsider_client = outsider_api
    assert builtin_tools(owner_client) == builtin_tools(outsider_client)


def test_the_tools_refuse_an_anonymous_client(anonymous_client):
    assert_error(anonymous_client.get(TOOLS), 401, "UNAUTHORIZED")


# --- health ------------------------------------------------------------------------------------
# No worker runs in these tests, so the platform is at best degraded; each call waits about a
# second for a worker to answer the ping.


@pytest.mark.dialect
def test_health_needs_no_login_and_reports_each_service(anonymous_client, llm_configured):
    response = anonymous_client.get(HEALTH)

    assert response.status_code == 200
    body = response.json()
    # llm_configured names a port where nothing listens: the LLM is down.
    assert body["services"] == {
        "database": "ok",
        "redis": "ok",
        "llm": "down",
        "tool_registry": "ready",
        "worker": "unreachable",
    }
    assert body["mcp_servers"] == {"active": 0, "broken": 0, "unchecked": 0}
    assert body["status"] == "degraded"
    assert datetime.fromisoformat(body["timestamp"]).tzinfo is not None


def test_health_reports_an_llm_that_is_not_configured(owner_api, settings):
    settings.LLM_BASE_URL = ""

    response = owner_api.get(HEALTH)

    assert response.status_code == 200
    body = response.json()
    assert body["services"]["llm"] == "not_configured"
    assert body["status"] == "degraded"


def test_health_answers_states_never_reasons(anonymous_client, llm_configured, settings):
    # A Redis that refuses: the answer says "error", the reason goes to the log only.
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:9/0"

    response = anonymous_client.get(HEALTH)

    services = response.json()["services"]
    assert (services["redis"], services["worker"]) == ("error", "unreachable")
