"""Long-lived MCP sessions: one per enabled server per process, in one background event loop.

The engine is synchronous and runs in worker threads; the `mcp` SDK is async. A process that
executes runs starts one `MCPPool`: a daemon thread running an asyncio loop that keeps a session
open to every enabled server (seed 004: no connection per call), reconnects with exponential
backoff, pings each server on a schedule and writes what it sees (active or broken, the error,
the tail of a stdio server's stderr, the tools) to the database. Tool calls from the engine
cross into the loop with `run_coroutine_threadsafe` and wait with the server's timeout.
"""

import asyncio
import atexit
import contextlib
import logging
import os
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

from tools_app.models import ServerConfig
from tools_app.registry import Tool, ToolContext, ToolError, ToolResult, ToolSpec
from tools_app.secrecy import redact, redact_all

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT = 30.0
STDERR_TAIL_LINES = 40
BACKOFF_FIRST = 0.5
BACKOFF_MAX = 30.0


@dataclass(frozen=True)
class DiscoveredTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any] = field(default_factory=dict)


def describe(exc: BaseException) -> str:
    """A readable message for an exception, unwrapping anyio's exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return exc.error.message
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def stderr_tail(stream: Any, secrets: tuple[str, ...] = ()) -> str:
    """The last lines the server wrote to stderr, `secrets` redacted (before the cut, so none
    survives in part)."""
    if stream is None:
        return ""
    try:
        stream.flush()
        stream.seek(0)
        lines = redact(stream.read(), secrets).splitlines()
    except (OSError, ValueError):
        return ""
    return "\n".join(lines[-STDERR_TAIL_LINES:])


@contextlib.asynccontextmanager
async def open_session(config: ServerConfig, errlog: Any) -> AsyncIterator[ClientSession]:
    """An initialized ClientSession over the server's transport."""
    async with contextlib.AsyncExitStack() as stack:
        if config.transport == "stdio":
            params = StdioServerParameters(
                command=config.command,
                args=list(config.args),
                env=dict(config.env) or None,
                cwd=config.cwd or None,
            )
            read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
        elif config.transport == "sse":
            read, write = await stack.enter_async_context(
                sse_client(config.url, headers=dict(config.headers), timeout=CONNECT_TIMEOUT)
            )
        else:
            client = await stack.enter_async_context(
                create_mcp_http_client(headers=dict(config.headers))
            )
            read, write = await stack.enter_async_context(
                streamable_http_client(config.url, http_client=client)
            )
        session = await stack.enter_async_context(ClientSession(read, write))
        await asyncio.wait_for(session.initialize(), CONNECT_TIMEOUT)
        yield session


async def list_all_tools(session: ClientSession) -> list[DiscoveredTool]:
    tools: list[DiscoveredTool] = []
    cursor = None
    while True:
        params = {"cursor": cursor} if cursor else None
        result = await session.list_tools(params=params) if params else await session.list_tools()
        for tool in result.tools:
            annotations = tool.annotations.model_dump(exclude_none=True) if tool.annotations else {}
            tools.append(
                DiscoveredTool(tool.name, tool.description or "", tool.input_schema, annotations)
            )
        cursor = getattr(result, "next_cursor", None)
        if not cursor:
            return tools


def call_result(result: Any, secrets: tuple[str, ...] = ()) -> ToolResult:
    """A CallToolResult as a ToolResult: `is_error` is a failure with the server's message.
    The server's own secrets are redacted from it: a tool that prints its environment must not
    hand them to the model, the run's events or the page."""
    texts, other = [], []
    for block in result.content or []:
        if getattr(block, "type", None) == "text":
            texts.append(block.text)
        else:  # images and blobs are summarised: the model gets no base64 walls
            other.append({"type": getattr(block, "type", "unknown")})
    content: dict[str, Any] = {"text": "\n".join(texts)}
    if result.structured_content is not None:
        content["structured"] = result.structured_content
    if other:
        content["other_content"] = other
    content = redact_all(content, secrets)
    if result.is_error:
        return ToolResult(ok=False, content=content, error=content["text"] or "the tool failed")
    return ToolResult(ok=True, content=content)


class ServerConnection:
    """One server's session, kept open by `run()` until `close()`."""

    def __init__(self, pool: "MCPPool", server_id: int, version: Any, config: ServerConfig):
        self.pool = pool
        self.server_id = server_id
        self.version = version
        self.config = config
        self.session: ClientSession | None = None
        self.ready = asyncio.Event()
        self.attempted = asyncio.Event()  # set after the first connect attempt, either way
        self.wake = asyncio.Event()
        self.closing = False
        self.last_error = ""
        # Set by a call that saw the server die, so the reconnect reports that and not a ping.
        self.call_failure = ""
        self.task: asyncio.Task | None = None

    async def run(self) -> None:
        backoff = self.pool.reconnect_delay
        while not self.closing:
            stdio = self.config.transport == "stdio"
            with (
                tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
                if stdio
                else contextlib.nullcontext()
            ) as errlog:
                connected = await self.attempt(errlog)
                if self.closing:
                    break
                await self.pool.broken(
                    self, self.last_error, stderr_tail(errlog, self.config.secrets)
                )
            self.attempted.set()
            if connected:
                backoff = self.pool.reconnect_delay
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), backoff)
            self.wake.clear()
            backoff = min(backoff * 2, BACKOFF_MAX)

    async def attempt(self, errlog: Any) -> bool:
        """Connect and serve until the session fails; True if it had connected."""
        connected = False
        try:
            async with open_session(self.config, errlog) as session:
                tools = await list_all_tools(session)
                self.session = session
                self.last_error = ""
                await self.pool.connected(self, tools)
                connected = True
                self.ready.set()
                self.attempted.set()
                await self.watch(session)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # anyio raises groups; every failure means reconnect
            self.last_error = self.call_failure or self.hide(describe(exc))
        else:
            self.last_error = self.call_failure or "the server closed the connection"
        finally:
            self.session = None
            self.ready.clear()
            self.call_failure = ""
        return connected

    async def watch(self, session: ClientSession) -> None:
        """Ping on a schedule; return when a ping fails or a call saw the server die."""
        while not self.closing:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), self.pool.health_interval)
            if self.wake.is_set():
                self.wake.clear()
                raise ConnectionError(self.call_failure or "the server stopped answering")
            await asyncio.wait_for(session.send_ping(), min(10.0, self.config.call_timeout))

    async def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> ToolResult:
        qualified = f"{self.config.name}.{tool}"
        deadline = time.monotonic() + timeout
        if not self.ready.is_set():
            self.wake.set()  # reconnect now rather than after the backoff
            try:
                await asyncio.wait_for(self.ready.wait(), timeout)
            except TimeoutError:
                raise ToolError(
                    f"MCP server '{self.config.name}' is not connected: "
                    f"{self.last_error or 'connecting'}"
                ) from None
        session = self.session
        remaining = max(0.1, deadline - time.monotonic())
        try:
            result = await asyncio.wait_for(
                session.call_tool(tool, arguments, read_timeout_seconds=remaining), remaining
            )
        except TimeoutError:
            raise ToolError(f"{qualified} timed out after {timeout:g} s") from None
        except MCPError as exc:
            if exc.error.code != CONNECTION_CLOSED:
                raise ToolError(f"{qualified}: {self.hide(exc.error.message)}") from None
            self.call_failure = f"the server closed the connection during a call to {tool}"
            self.wake.set()
            raise ToolError(f"{qualified}: {self.call_failure}") from None
        except Exception as exc:
            self.call_failure = (
                f"the server failed during a call to {tool}: {self.hide(describe(exc))}"
            )
            self.wake.set()
            raise ToolError(f"{qualified}: {self.call_failure}") from None
        return call_result(result, self.config.secrets)

    def hide(self, text: str) -> str:
        """`text` from or about the server with the values substituted into its configuration
        redacted: what the server says may quote its own environment."""
        return redact(text, self.config.secrets)

    async def close(self) -> None:
        self.closing = True
        self.wake.set()
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self.task, 10)


class MCPTool(Tool):
    """A tool of an MCP server, called through the pool's live session."""

    def __init__(self, spec: ToolSpec, pool: "MCPPool", server_id: int, remote_name: str):
        self.spec = spec
        self.pool = pool
        self.server_id = server_id
        self.remote_name = remote_name

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        if refusal := pin_refusal(self.spec):
            raise ToolError(refusal)
        timeout = min(self.spec.timeout, context.timeout)
        return self.pool.call(self.server_id, self.remote_name, arguments, timeout)


def pin_refusal(spec: ToolSpec) -> str:
    """Why a call of this MCP tool may not go to its server now, or "": it must still be the
    version it was offered as (tools_app.mcp.pins). A step planned before its server changed
    it, or a spec registered before staff approved another version, is refused."""
    from tools_app.models import PinStatus, Tool

    pin = Tool.objects.filter(name=spec.name).values_list("pin_status", "pinned_sha256").first()
    if pin is None:
        return f"{spec.name} is no longer offered by its server"
    if pin[0] != PinStatus.PINNED:
        return f"{spec.name} changed on its server and waits for staff to review it"
    if pin[1] != spec.pinned_sha256:
        return f"{spec.name} was approved in another version; it is offered again shortly"
    return ""


class MCPPool:
    """The process's MCP sessions. `store` is where discoveries and statuses are written."""

    def __init__(
        self,
        registry: Any,
        store: Any,
        *,
        poll_interval: float,
        health_interval: float,
        reconnect_delay: float = BACKOFF_FIRST,
    ):
        self.registry = registry
        self.reconnect_delay = reconnect_delay
        self.store = store
        self.poll_interval = poll_interval
        self.health_interval = health_interval
        self.loop = asyncio.new_event_loop()
        self.connections: dict[int, ServerConnection] = {}
        self.tool_names: dict[int, set[str]] = {}
        # Per server, the pins its registered tools were last taken with (store.pin_marks).
        self.pins: dict[int, tuple | None] = {}
        self._first_sync = threading.Event()
        self._thread = threading.Thread(target=self._run_loop, name="mcp-pool", daemon=True)
        self._supervisor: asyncio.Future | None = None

    def start(self) -> None:
        self._thread.start()
        self._supervisor = asyncio.run_coroutine_threadsafe(self._supervise(), self.loop)

    def _run_loop(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def wait_ready(self, timeout: float) -> None:
        """Wait until every enabled server has been tried once (connected or broken)."""
        if not self._first_sync.wait(timeout):
            return
        future = asyncio.run_coroutine_threadsafe(self._all_attempted(), self.loop)
        with contextlib.suppress(Exception):
            future.result(timeout)

    async def _all_attempted(self) -> None:
        await asyncio.gather(*(c.attempted.wait() for c in list(self.connections.values())))

    async def _supervise(self) -> None:
        while True:
            try:
                await self.sync_servers()
            except Exception:
                logger.exception("MCP: could not load the server list")
            self._first_sync.set()
            await asyncio.sleep(self.poll_interval)

    async def sync_servers(self) -> None:
        """Start, restart and stop connections to match the enabled servers in the database;
        register the tools of a connected server again when their pins moved."""
        wanted = await asyncio.to_thread(self.store.enabled_servers)
        seen = set()
        for server_id, version, config in wanted:
            seen.add(server_id)
            current = self.connections.get(server_id)
            if current is not None and current.version == version:
                continue
            if current is not None:
                await current.close()
            if isinstance(config, Exception):  # e.g. a secret's variable is not set
                self.connections.pop(server_id, None)
                await asyncio.to_thread(self.store.record_broken, server_id, describe(config), "")
                continue
            connection = ServerConnection(self, server_id, version, config)
            connection.task = asyncio.create_task(connection.run(), name=f"mcp-{config.name}")
            self.connections[server_id] = connection
        for server_id in set(self.connections) - seen:
            await self.connections.pop(server_id).close()
            self._unregister(server_id)
        await self.refresh_pins()

    async def refresh_pins(self) -> None:
        """A check elsewhere found a tool changed, or staff approved its new version: the
        tools of this process's live sessions follow their rows (tools_app.mcp.pins)."""
        marks = await asyncio.to_thread(self.store.pin_marks)
        for server_id, connection in list(self.connections.items()):
            if not connection.ready.is_set() or server_id not in self.tool_names:
                continue
            mark = marks.get(server_id, ())
            if self.pins.get(server_id) == mark:
                continue
            specs = await asyncio.to_thread(self.store.offered_specs, server_id)
            self._register(connection, specs)
            self.pins[server_id] = mark

    async def connected(self, connection: ServerConnection, tools: list[DiscoveredTool]) -> None:
        specs = await asyncio.to_thread(
            self.store.record_active, connection.server_id, connection.config, tools
        )
        self._register(connection, specs)
        self.pins.pop(connection.server_id, None)  # registered again from the rows next poll

    def _register(self, connection: ServerConnection, specs: list[tuple[str, ToolSpec]]) -> None:
        self._unregister(connection.server_id)
        for remote_name, spec in specs:
            self.registry.register(MCPTool(spec, self, connection.server_id, remote_name))
        self.tool_names[connection.server_id] = {spec.name for _, spec in specs}

    async def broken(self, connection: ServerConnection, error: str, stderr: str) -> None:
        logger.warning("MCP server %s is broken: %s", connection.config.name, error)
        await asyncio.to_thread(self.store.record_broken, connection.server_id, error, stderr)

    def _unregister(self, server_id: int) -> None:
        for name in self.tool_names.pop(server_id, set()):
            self.registry.unregister(name)

    def call(
        self, server_id: int, tool: str, arguments: dict[str, Any], timeout: float
    ) -> ToolResult:
        connection = self.connections.get(server_id)
        if connection is None:
            raise ToolError("the MCP server of this tool is not enabled in this process")
        future = asyncio.run_coroutine_threadsafe(
            connection.call(tool, arguments, timeout), self.loop
        )
        try:
            return future.result(timeout + 5)
        except TimeoutError:
            future.cancel()
            raise ToolError(
                f"{connection.config.name}.{tool} timed out after {timeout:g} s"
            ) from None

    def close(self) -> None:
        async def close_all() -> None:
            if self._supervisor is not None:
                self._supervisor.cancel()
            await asyncio.gather(*(c.close() for c in list(self.connections.values())))
            for server_id in list(self.tool_names):
                self._unregister(server_id)  # no tool may call into a closed pool

        if self._thread.is_alive():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(close_all(), self.loop).result(15)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(5)


_pool: MCPPool | None = None
_pool_pid = 0
_pool_lock = threading.Lock()


def ensure_pool(registry: Any, *, wait: float = 0.0) -> MCPPool:
    """Start this process's pool once (after any fork: a pool inherited through one has no
    thread in this process) and return it. Workers start it as each process starts
    (`agents_app.worker.mcp_startup`); `wait` waits until every enabled server was tried."""
    global _pool, _pool_pid
    with _pool_lock:
        if _pool is None or _pool_pid != os.getpid():
            _pool_pid = os.getpid()
            from django.conf import settings

            from tools_app.mcp.store import DatabaseStore

            _pool = MCPPool(
                registry,
                DatabaseStore(),
                poll_interval=settings.MCP_POLL_INTERVAL,
                health_interval=settings.MCP_HEALTH_INTERVAL,
                reconnect_delay=settings.MCP_RECONNECT_DELAY,
            )
            _pool.start()
            atexit.register(_pool.close)
    if wait:
        _pool.wait_ready(wait)
    return _pool


def shutdown_pool() -> None:
    """Close this process's pool, if it was started: its sessions end and its stdio servers
    stop. A later `ensure_pool` starts a fresh one."""
    global _pool
    with _pool_lock:
        pool, _pool = _pool, None
    if pool is not None:
        atexit.unregister(pool.close)
        pool.close()


def check_servers(server_ids: list[int]) -> list[tuple[str, str, str]]:
    """Connect to each server once from this process (the admin's "Check now"): discover its
    tools and record it active or broken. Returns (name, status, error) per server."""
    from tools_app.mcp.store import DatabaseStore
    from tools_app.models import MCPServer, ServerConfigError

    store = DatabaseStore()
    servers = list(MCPServer.objects.filter(pk__in=server_ids, enabled=True))

    async def check(server: Any) -> tuple[str, str, str]:
        try:
            config = server.spec()
        except ServerConfigError as exc:
            await asyncio.to_thread(store.record_broken, server.pk, str(exc), "")
            return server.name, "broken", str(exc)
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
            try:
                async with open_session(config, errlog) as session:
                    tools = await list_all_tools(session)
            except Exception as exc:
                error = redact(describe(exc), config.secrets)
                tail = stderr_tail(errlog, config.secrets)
                await asyncio.to_thread(store.record_broken, server.pk, error, tail)
                return server.name, "broken", error
        await asyncio.to_thread(store.record_active, server.pk, config, tools)
        return server.name, "active", ""

    async def check_all() -> list[tuple[str, str, str]]:
        return list(await asyncio.gather(*(check(server) for server in servers)))

    return asyncio.run(check_all())
