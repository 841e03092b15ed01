"""GET /api/v1/health checks what it reports: it asks the default LLM connection's server
(GET <base>/models, at most once every few seconds, with a short timeout), counts the MCP
servers by state, and says `degraded` (still 200) when one is down. Anyone sees the states;
only staff see why and when each was checked."""

from datetime import datetime

import pytest

from agents_app.models import ConnectionStatus, LLMConnection
from tests.support.llm_server import ScriptedLLMServer
from tests.support.waiting import wait_for
from tools_app.models import MCPServer

HEALTH = "/api/v1/health"


def llm_state(client) -> str:
    response = client.get(HEALTH)
    assert response.status_code == 200
    return response.json()["services"]["llm"]


@pytest.fixture
def own_llm(settings):
    """A scripted LLM server of this test's own, which the test may stop and start again on
    the same port (the session's `llm_server` is everyone's)."""
    servers = [ScriptedLLMServer().start()]
    settings.LLM_BASE_URL = servers[0].base_url
    settings.LLM_MODEL = "scripted"
    yield servers
    servers[-1].stop()


@pytest.fixture
def mcp_servers(db):
    good = MCPServer.objects.create(name="good", transport="stdio", command="node")
    good.mark("active", tool_count=3)
    bad = MCPServer.objects.create(name="bad", transport="stdio", command="node")
    bad.mark("broken", error="spawn node ENOENT")
    MCPServer.objects.create(name="new", transport="stdio", command="node")
    return good, bad


@pytest.mark.django_db
def test_health_reports_the_llm_down_within_ten_seconds_of_its_server_stopping_and_up_after(
    anonymous_client, own_llm
):
    assert llm_state(anonymous_client) == "connected"
    port = own_llm[0].port

    own_llm[0].stop()
    wait_for(lambda: llm_state(anonymous_client) == "down", timeout=10, message="llm down")

    own_llm.append(ScriptedLLMServer(port=port).start())
    wait_for(lambda: llm_state(anonymous_client) == "connected", timeout=10, message="llm up")


@pytest.mark.django_db
def test_an_llm_that_is_down_makes_health_degraded_not_unhealthy(anonymous_client, llm_configured):
    # llm_configured points at a port where nothing listens.
    response = anonymous_client.get(HEALTH)

    assert response.status_code == 200
    body = response.json()
    assert body["services"]["llm"] == "down"
    assert body["status"] == "degraded"


@pytest.mark.django_db
def test_the_probe_is_cached_so_callers_do_not_ask_the_llm_server_each_time(
    anonymous_client, own_llm
):
    assert llm_state(anonymous_client) == "connected"
    checked = LLMConnection.objects.get(seeded=True).last_checked_at
    assert checked is not None

    assert llm_state(anonymous_client) == "connected"

    assert LLMConnection.objects.get(seeded=True).last_checked_at == checked


@pytest.mark.django_db
def test_health_counts_the_mcp_servers_by_state_and_a_broken_one_degrades_it(
    anonymous_client, own_llm, mcp_servers
):
    body = anonymous_client.get(HEALTH).json()

    assert body["mcp_servers"] == {"active": 1, "broken": 1, "unchecked": 1}
    assert body["services"]["tool_registry"] == "degraded"
    assert body["status"] == "degraded"


@pytest.mark.django_db
def test_with_every_mcp_server_active_the_tool_registry_is_ready(anonymous_client, own_llm, db):
    MCPServer.objects.create(name="good", transport="stdio", command="node").mark("active")

    body = anonymous_client.get(HEALTH).json()

    assert body["mcp_servers"] == {"active": 1, "broken": 0, "unchecked": 0}
    assert body["services"]["tool_registry"] == "ready"


@pytest.mark.django_db
@pytest.mark.parametrize("caller", ["anonymous_client", "owner_api", "owner_session"])
def test_a_caller_who_is_not_staff_sees_states_but_never_reasons_or_check_times(
    caller, request, llm_configured, mcp_servers
):
    client = request.getfixturevalue(caller)

    response = client.get(HEALTH)

    body = response.json()
    assert body["services"]["llm"] == "down"
    assert "details" not in body
    text = response.content.decode()
    assert "cannot reach" not in text and "ENOENT" not in text and "checked_at" not in text


@pytest.mark.django_db
@pytest.mark.parametrize("caller", ["staff_api", "staff_session"])
def test_staff_see_why_the_llm_and_a_server_are_down_and_when_each_was_checked(
    caller, request, llm_configured, mcp_servers
):
    client = request.getfixturevalue(caller)

    body = client.get(HEALTH).json()

    llm = body["details"]["llm"]
    assert llm["state"] == "down" and llm["connection"] == "env" and llm["model"] == "scripted"
    assert "cannot reach the LLM server" in llm["reason"]
    assert datetime.fromisoformat(llm["checked_at"]).tzinfo is not None
    servers = {server["name"]: server for server in body["details"]["mcp_servers"]}
    assert servers["bad"]["status"] == "broken" and servers["bad"]["reason"] == "spawn node ENOENT"
    assert servers["good"]["status"] == "active" and servers["good"]["checked_at"]
    assert servers["new"]["status"] == "unchecked" and servers["new"]["checked_at"] is None


@pytest.mark.django_db
def test_the_probe_is_recorded_on_the_connection_as_staff_see_it_in_the_admin(
    anonymous_client, llm_configured
):
    anonymous_client.get(HEALTH)

    connection = LLMConnection.objects.get(seeded=True)
    assert connection.status == ConnectionStatus.BROKEN
    assert "cannot reach" in connection.last_error
