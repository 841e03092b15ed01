"""A server's substituted secrets never reach what AgentDesk stores, logs or shows: its error
text, its stderr, its tools' results. A real stdio server that prints its environment and
quotes its token everywhere stands in for a careless one."""

import logging
import sys

import pytest
from django.contrib.messages import get_messages
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from agents_app.models import AuditEvent
from tests.support.mcp_servers import LEAKY_SERVER
from tests.support.waiting import wait_for
from tools_app.mcp.client import MCPPool
from tools_app.mcp.store import DatabaseStore
from tools_app.models import MCPServer, ServerStatus
from tools_app.registry import ToolContext, ToolRegistry

# transaction=True: the pool and the admin's check write from threads with their own connections.
pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

TOKEN = "tok-Zq8rT3vLw9Xa"
CHANGELIST = "/admin/tools_app/mcpserver/"


@pytest.fixture
def leaky(monkeypatch):
    monkeypatch.setenv("LEAKY_SECRET", TOKEN)

    def make(mode: str) -> MCPServer:
        return MCPServer.objects.create(
            name="leaky",
            transport="stdio",
            command=sys.executable,
            args=[str(LEAKY_SERVER), mode],
            env={"LEAKY_TOKEN": "${LEAKY_SECRET}"},
        )

    return make


@pytest.fixture
def pool():
    """Starts a pool when called: after the test has created its server, so the first sync,
    which `wait_ready` waits for, sees it."""
    pools = []

    def start() -> MCPPool:
        started = MCPPool(ToolRegistry(), DatabaseStore(), poll_interval=0.5, health_interval=30.0)
        started.start()
        pools.append(started)
        return started

    yield start
    for started in pools:
        started.close()


def test_check_now_stores_and_shows_a_broken_servers_output_with_its_secret_redacted(
    superuser_admin, leaky
):
    server = leaky("broken")

    response = superuser_admin.post(
        CHANGELIST, {"action": "check_now", "_selected_action": [server.pk]}, follow=True
    )

    server.refresh_from_db()
    assert server.status == ServerStatus.BROKEN
    assert server.last_error == "invalid token [redacted]"
    assert "fatal: token [redacted] refused" in server.stderr_tail
    assert "'LEAKY_TOKEN': '[redacted]'" in server.stderr_tail
    assert TOKEN not in server.stderr_tail
    shown = " ".join(str(m) for m in get_messages(response.wsgi_request))
    assert "leaky: Broken: invalid token [redacted]" in shown and TOKEN not in shown
    page = superuser_admin.get(f"{CHANGELIST}{server.pk}/change/").content.decode()
    assert "fatal: token [redacted] refused" in page and TOKEN not in page
    assert TOKEN not in superuser_admin.get("/").content.decode()
    assert TOKEN not in str(list(AuditEvent.objects.values_list("details", flat=True)))


def test_the_pool_logs_and_stores_a_broken_server_with_its_secret_redacted(pool, leaky, caplog):
    server = leaky("broken")

    with caplog.at_level(logging.WARNING, logger="tools_app.mcp.client"):
        pool()
        wait_for(lambda: "fatal" in MCPServer.objects.get(pk=server.pk).stderr_tail)

    server.refresh_from_db()
    assert server.last_error == "invalid token [redacted]"
    assert TOKEN not in server.stderr_tail and "[redacted]" in server.stderr_tail
    logged = [r.getMessage() for r in caplog.records]
    assert any("invalid token [redacted]" in m for m in logged)
    assert not [m for m in logged if TOKEN in m]


def test_a_tools_result_and_error_reach_the_run_with_the_servers_secret_redacted(pool, leaky):
    leaky("serve")
    running = pool()
    running.wait_ready(60)
    context = ToolContext(run_id=0, workspace="/tmp", timeout=20.0)

    shown = running.registry.call("leaky.show_token", {}, context)
    failed = running.registry.call("leaky.fail_with_token", {}, context)

    assert shown.ok and shown.content["text"] == "token is [redacted]"
    assert not failed.ok and "rejected token [redacted]" in failed.error
    assert TOKEN not in repr(failed.content)


@pytest.mark.dialect
def test_the_migration_redacts_what_was_stored_before_redaction(leaky):
    before, after = [("tools_app", "0001_initial")], [("tools_app", "0002_redact_server_output")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps.get_model("tools_app", "MCPServer")
    old.objects.create(
        name="leaky",
        command="node",
        env={"LEAKY_TOKEN": "${LEAKY_SECRET}"},
        last_error=f"invalid token {TOKEN}",
        stderr_tail=f"LEAKY_TOKEN={TOKEN}\nfatal",
    )

    executor = MigrationExecutor(connection)
    executor.migrate(after)
    try:
        # Read as 0002 left it: the model of today has columns later migrations add.
        stored = executor.loader.project_state(after).apps.get_model("tools_app", "MCPServer")
        server = stored.objects.get(name="leaky")
        assert server.last_error == "invalid token [redacted]"
        assert server.stderr_tail == "LEAKY_TOKEN=[redacted]\nfatal"
    finally:
        # The tests after this one in this process need every migration again.
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
