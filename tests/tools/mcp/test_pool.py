"""Long-lived sessions to the reference MCP servers, over stdio, streamable HTTP and SSE."""

import os
import signal
import threading
import time
import uuid

import pytest

from agents_app.core.errors import DomainError
from tests.support.mcp_servers import (
    EverythingHttpServer,
    everything_stdio_args,
    filesystem_js,
    node,
    python_server,
)
from tests.support.processes import pid_with_env
from tools_app.mcp.client import MCPPool, ensure_pool, shutdown_pool
from tools_app.mcp.store import DatabaseStore
from tools_app.models import MCPServer, Tool
from tools_app.registry import ToolContext, ToolRegistry

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def pool():
    pools = []

    def start(*, poll=0.5, health=30.0, reconnect_delay=0.5):
        registry = ToolRegistry()
        started = MCPPool(
            registry,
            DatabaseStore(),
            poll_interval=poll,
            health_interval=health,
            reconnect_delay=reconnect_delay,
        )
        started.start()
        pools.append(started)
        return started

    yield start
    for started in pools:
        started.close()


def call(pool, name, arguments, timeout=20.0, workspace="/tmp"):
    context = ToolContext(run_id=0, workspace=workspace, timeout=timeout)
    return pool.registry.call(name, arguments, context)


def stdio_server(name="everything", **fields):
    return MCPServer.objects.create(
        name=name, transport="stdio", command=node(), args=everything_stdio_args(), **fields
    )


def wait_until(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_it_discovers_and_calls_tools_over_stdio(pool):
    server = stdio_server()
    running = pool()
    running.wait_ready(60)
    server.refresh_from_db()
    assert (server.status, server.last_error) == ("active", "")
    assert "everything.echo" in running.registry.names()
    assert server.tool_count == Tool.objects.filter(server=server).count() > 5
    result = call(running, "everything.echo", {"message": "hello"})
    assert result.ok and "hello" in result.content["text"]
    summed = call(running, "everything.get-sum", {"a": 2, "b": 3})
    assert summed.ok and "5" in summed.content["text"]


@pytest.mark.parametrize(
    ("mode", "transport"), [("streamableHttp", "streamable_http"), ("sse", "sse")]
)
def test_it_discovers_and_calls_tools_over_http(pool, tmp_path, mode, transport):
    http = EverythingHttpServer(mode, tmp_path).start()
    try:
        MCPServer.objects.create(name="remote", transport=transport, url=http.url)
        running = pool()
        running.wait_ready(60)
        server = MCPServer.objects.get(name="remote")
        assert server.status == "active", server.last_error
        result = call(running, "remote.echo", {"message": "over http"})
        assert result.ok and "over http" in result.content["text"]
    finally:
        http.stop()


def test_an_is_error_result_is_a_failure_with_the_servers_message(pool, tmp_path):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    MCPServer.objects.create(
        name="files", transport="stdio", command=node(), args=[filesystem_js(), str(allowed)]
    )
    running = pool()
    running.wait_ready(60)
    result = call(running, "files.read_text_file", {"path": "/etc/hostname"})
    assert not result.ok
    assert "denied" in result.error.lower() or "outside" in result.error.lower(), result.error


def test_invalid_arguments_are_refused_before_the_call(pool):
    stdio_server()
    running = pool()
    running.wait_ready(60)
    with pytest.raises(DomainError) as refused:
        call(running, "everything.get-sum", {"a": "two", "b": 3})
    assert refused.value.code == "INVALID_ARGUMENTS" and "get-sum" in refused.value.message


def test_a_call_past_the_servers_timeout_fails_clearly(pool):
    stdio_server(call_timeout=1.0)
    running = pool()
    running.wait_ready(60)
    started = time.monotonic()
    result = call(
        running, "everything.trigger-long-running-operation", {"duration": 10, "steps": 2}
    )
    assert not result.ok and "timed out after 1 s" in result.error
    assert time.monotonic() - started < 5


def test_a_stdio_server_killed_mid_call_fails_the_call_shows_broken_and_comes_back(pool, tmp_path):
    marker = uuid.uuid4().hex
    requests = tmp_path / "requests.log"  # what the server reads (tests/support/loopback.cjs)
    server = stdio_server(
        env={"AGENTDESK_TEST_SERVER": marker, "AGENTDESK_TEST_REQUEST_LOG": str(requests)}
    )
    running = pool(reconnect_delay=30)  # only the next call brings it back
    running.wait_ready(60)
    outcome = {}

    def long_call():
        outcome["result"] = call(
            running, "everything.trigger-long-running-operation", {"duration": 20, "steps": 4}
        )

    caller = threading.Thread(target=long_call)
    caller.start()
    # Killed once the server has read the call's request, so the call is under way.
    assert wait_until(
        lambda: requests.exists() and "trigger-long-running-operation" in requests.read_text()
    )
    os.kill(pid_with_env("AGENTDESK_TEST_SERVER", marker), signal.SIGKILL)
    caller.join(30)
    result = outcome["result"]
    assert not result.ok and "during a call to trigger-long" in result.error, result.error

    assert wait_until(lambda: MCPServer.objects.get(pk=server.pk).status == "broken", 10)
    broken = MCPServer.objects.get(pk=server.pk)
    assert "during a call to trigger-long" in broken.last_error
    assert broken.stderr_tail.strip(), "the server's stderr should be shown"

    again = call(running, "everything.echo", {"message": "back"})  # reconnects, same process
    assert again.ok and "back" in again.content["text"]
    assert wait_until(lambda: MCPServer.objects.get(pk=server.pk).status == "active", 10)


def test_a_missing_secret_variable_marks_the_server_broken_with_its_name(pool):
    MCPServer.objects.create(
        name="needs-token",
        transport="stdio",
        command=node(),
        args=everything_stdio_args(),
        env={"API_TOKEN": "${AGENTDESK_TEST_UNSET_TOKEN}"},
    )
    running = pool()
    running.wait_ready(30)
    assert wait_until(lambda: MCPServer.objects.get(name="needs-token").status == "broken", 10)
    assert "AGENTDESK_TEST_UNSET_TOKEN" in MCPServer.objects.get(name="needs-token").last_error


def test_shutting_the_process_pool_down_stops_its_servers_and_unregisters_their_tools():
    marker = uuid.uuid4().hex
    stdio_server(env={"AGENTDESK_TEST_SERVER": marker})
    registry = ToolRegistry()
    first = ensure_pool(registry, wait=60)
    assert "everything.echo" in registry.names()
    server = pid_with_env("AGENTDESK_TEST_SERVER", marker)

    shutdown_pool()
    assert "everything.echo" not in registry.names()
    assert wait_until(lambda: not process_alive(server), 10), "the stdio server should exit"
    assert ensure_pool(registry, wait=60) is not first  # a fresh pool, connected again
    assert "everything.echo" in registry.names()
    shutdown_pool()


def process_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_disabling_a_server_in_the_database_closes_its_session(pool):
    server = stdio_server()
    running = pool()
    running.wait_ready(60)
    assert "everything.echo" in running.registry.names()
    MCPServer.objects.filter(pk=server.pk).disable()
    assert wait_until(lambda: "everything.echo" not in running.registry.names(), 10)


def test_python_servers_from_pypi_work_too(pool, tmp_path):
    MCPServer.objects.create(
        name="time", transport="stdio", command=python_server("mcp-server-time")
    )
    running = pool()
    running.wait_ready(60)
    assert MCPServer.objects.get(name="time").status == "active"
    result = call(running, "time.get_current_time", {"timezone": "UTC"})
    assert result.ok and "UTC" in result.content["text"]
