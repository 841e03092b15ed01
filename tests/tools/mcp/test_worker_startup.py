"""A worker connects to the MCP servers as it starts: their real status and their tools are
there (in the database, `GET /api/v1/tools`, the Tools page) before any run is executed, and a
server that cannot start is shown broken with the reason without holding the worker up."""

import sys
import uuid

import pytest

from agents_app.models import Run
from tests.support.mcp_servers import ECHO_SERVER
from tests.support.processes import pid_with_env
from tests.support.waiting import wait_for
from tools_app.models import MCPServer, ServerStatus, Tool

pytestmark = pytest.mark.integration

MISSING_COMMAND = "/nonexistent/agentdesk-no-such-mcp-server"


def parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


def status_of(server: MCPServer) -> str:
    return MCPServer.objects.get(pk=server.pk).status


def test_a_starting_worker_lists_a_servers_tools_before_any_run(
    start_worker, owner_api, owner_session
):
    marker = uuid.uuid4().hex
    echo = MCPServer.objects.create(
        name="echo",
        transport="stdio",
        command=sys.executable,
        args=[str(ECHO_SERVER)],
        env={"AGENTDESK_TEST_SERVER": marker},
    )
    assert not Tool.objects.filter(server=echo).exists()
    assert owner_api.get("/api/v1/tools").json()["tools"]  # the builtin ones only, so far
    assert "echo.echo" not in {t["name"] for t in owner_api.get("/api/v1/tools").json()["tools"]}

    worker = start_worker()

    wait_for(lambda: status_of(echo) == ServerStatus.ACTIVE, 30, message="echo active")
    # One session, opened by the process that executes runs: with the threads pool, the
    # worker's own process (no pool child in between).
    opener = parent_of(pid_with_env("AGENTDESK_TEST_SERVER", marker))
    assert opener == worker.process.pid
    listed = {t["name"]: t for t in owner_api.get("/api/v1/tools").json()["tools"]}
    assert {"echo.echo", "echo.get_current_time"} <= set(listed)
    assert listed["echo.echo"]["server"] == {"name": "echo", "status": "active", "last_error": ""}
    page = owner_session.get("/tools/").content.decode()
    assert "echo.echo" in page and "echo.get_current_time" in page
    assert not Run.objects.exists()


def test_a_server_whose_command_does_not_exist_is_shown_broken_with_the_reason_by_a_starting_worker(
    start_worker, owner_api
):
    ghost = MCPServer.objects.create(name="ghost", transport="stdio", command=MISSING_COMMAND)
    assert status_of(ghost) == ServerStatus.UNCHECKED

    start_worker()

    wait_for(lambda: status_of(ghost) == ServerStatus.BROKEN, 30, message="ghost broken")
    assert MISSING_COMMAND in MCPServer.objects.get(pk=ghost.pk).last_error
    assert not Run.objects.exists()
