"""The tool catalogue as clients and the planner see it: code, discovered rows, staff edits."""

import pytest

from tests.support.tools import make_registry
from tools_app.mcp.discovery import sync_server_tools
from tools_app.models import MCPServer, Tool
from tools_app.selectors import configured_specs

pytestmark = pytest.mark.django_db


@pytest.fixture
def server():
    server = MCPServer.objects.create(
        name="remote", transport="streamable_http", url="http://127.0.0.1:9/mcp"
    )
    sync_server_tools(
        server,
        [
            {"name": "echo", "description": "Echo.", "input_schema": {"type": "object"}},
            {"name": "wipe", "description": "Delete all.", "input_schema": {"type": "object"}},
        ],
    )
    server.mark("broken", error="connection refused")
    return server


def test_the_api_lists_mcp_tools_with_their_servers_status(client, staff, api_key_for, server):
    tools = client.get("/api/v1/tools", HTTP_AUTHORIZATION=api_key_for(staff).decode()).json()[
        "tools"
    ]
    echo = next(t for t in tools if t["name"] == "remote.echo")
    assert echo["server"] == {
        "name": "remote",
        "status": "broken",
        "last_error": "connection refused",
    }
    assert echo["source"] == "mcp" and echo["approval_level"] == "moderate"
    assert any(t["name"] == "read_file" and t["server"] is None for t in tools)


def test_a_user_who_is_not_staff_sees_that_a_server_is_down_not_its_error(
    client, owner, api_key_for, server
):
    tools = client.get("/api/v1/tools", HTTP_AUTHORIZATION=api_key_for(owner).decode()).json()[
        "tools"
    ]
    echo = next(t for t in tools if t["name"] == "remote.echo")
    assert echo["server"] == {"name": "remote", "status": "broken", "last_error": ""}


def test_tools_staff_disabled_are_neither_listed_nor_offered(client, owner, api_key_for, server):
    Tool.objects.filter(name="remote.wipe").update(enabled=False)
    Tool.objects.create(name="echo", source="builtin", enabled=False)
    tools = client.get("/api/v1/tools", HTTP_AUTHORIZATION=api_key_for(owner).decode()).json()[
        "tools"
    ]
    assert "remote.wipe" not in {t["name"] for t in tools}
    assert "echo" not in {s.name for s in configured_specs(make_registry())}


def test_staff_edits_to_a_builtin_tool_reach_the_planner(owner):
    Tool.objects.create(
        name="echo",
        source="builtin",
        capabilities=["SPEAK"],
        domain="talk",
        approval_level="manual",
    )
    echo = next(s for s in configured_specs(make_registry()) if s.name == "echo")
    assert (echo.capabilities, echo.domain, echo.approval_level) == (
        frozenset({"SPEAK"}),
        "talk",
        "manual",
    )
