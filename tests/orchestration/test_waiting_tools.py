"""Seed 003: a micro agent is never offered a tool that waits for something outside the run,
whatever the MCP server's name before the tool's own (`timer.sleep`, `timer.wait_for_event`),
nor one staff flagged as waiting in the admin. Against a real stdio MCP server
(tests/support/waiting_mcp_server.py)."""

import sys
from pathlib import Path

import pytest

from agents_app.models import Run
from agents_app.worker.execution import execute_run
from tests.support.script import tool_call
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import EchoTool, FinishTool, make_registry
from tools_app.mcp.client import MCPPool
from tools_app.mcp.store import DatabaseStore
from tools_app.models import MCPServer, ServerStatus, Tool

from .test_team_engine import deliver, split, sub, team_run

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

WAITING_SERVER = Path(__file__).parents[1] / "support" / "waiting_mcp_server.py"
PERSONA = "You are a patient checker."


@pytest.fixture
def timer_registry():
    """A registry holding echo, finish_task and the tools of a real `timer` MCP server."""
    server = MCPServer.objects.create(
        name="timer", transport="stdio", command=sys.executable, args=[str(WAITING_SERVER)]
    )
    registry = make_registry(EchoTool(), FinishTool())
    pool = MCPPool(registry, DatabaseStore(), poll_interval=0.5, health_interval=30.0)
    pool.start()
    try:
        pool.wait_ready(60)
        server.refresh_from_db()
        assert server.status == ServerStatus.ACTIVE, server.last_error
        yield registry
    finally:
        pool.close()


def test_no_waiting_tool_of_a_real_mcp_server_is_offered_to_a_micro_agent(
    owner, seeded_profiles, queued_runs, superuser_admin, timer_registry
):
    assert {"timer.sleep", "timer.wait_for_event", "timer.rest_n_wait"} <= set(
        timer_registry.names()
    )
    # Staff flag a tool whose name does not say it waits.
    note = Tool.objects.get(name="timer.note")
    response = superuser_admin.post(
        f"/admin/tools_app/tool/{note.pk}/change/",
        {
            "enabled": "on",
            "approval_level": "auto",
            "waits": "on",
            "capabilities": ", ".join(note.capabilities),
            "domain": note.domain,
            "side_effects": note.side_effects,
        },
    )
    assert response.status_code == 302
    assert Tool.objects.get(name="timer.note").waits
    micro = {"persona": PERSONA, "max_steps": 2}
    rules = [
        {"match": "AGENTDESK:TEAM", "replies": [split("parallel", sub("Check it", micro=micro))]}
    ]
    head = deliver(team_run(owner).pk, rules, timer_registry)
    (child,) = Run.objects.filter(parent=head)
    offered = ["echo", "finish_task", "timer.lookup"]
    assert sorted(child.task.allowed_tools) == offered

    provider = ScriptedProvider(
        [{"match": PERSONA, "replies": [tool_call("finish_task", result="checked")]}]
    )
    execute_run(child.pk, provider=provider, registry=timer_registry)
    child.refresh_from_db()
    assert child.status == "succeeded", (child.error_code, child.error_message)
    (request,) = provider.requests
    # On the wire a tool's dot is spelt `__`.
    assert sorted(t.name for t in request.tools) == ["echo", "finish_task", "timer__lookup"]
