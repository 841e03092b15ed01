"""What a tool call costs through AgentDesk's registry, beside a direct MCP SDK call to the
same server in the same run: a builtin tool, and server-everything's echo over stdio and over
streamable HTTP.

    uv run python bench/tool_calls.py [--calls 300]

The platform path is the engine's: ToolRegistry.call → argument validation against the tool's
schema → the process's MCP pool (a long-lived session in a background event loop) → the server.
The direct path is one ClientSession used from its own event loop. SQLite in a temporary
directory unless DATABASE_URL is set; the npm servers are installed into .mcp-servers/.
"""

import argparse
import asyncio
import statistics
import tempfile
import time

from harness import start_django  # noqa: E402  (bench/ is on sys.path when run as a script)


def summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {statistics.median(ordered):7.3f} ms   p99 {p99:7.3f} ms"


def timed(count: int, call) -> list[float]:
    call()  # warm up
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


async def direct_samples(config, count: int) -> list[float]:
    from tools_app.mcp.client import open_session

    with tempfile.TemporaryFile("w+") as errlog:
        async with open_session(config, errlog) as session:
            await session.call_tool("echo", {"message": "warm"})
            samples = []
            for _ in range(count):
                started = time.perf_counter()
                result = await session.call_tool("echo", {"message": "ping"})
                samples.append((time.perf_counter() - started) * 1000)
                assert not result.is_error
            return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()

    scratch, valkey = start_django("toolcalls")
    from tests.support.mcp_servers import EverythingHttpServer, everything_stdio_args, node
    from tools_app.mcp.client import MCPPool
    from tools_app.mcp.store import DatabaseStore
    from tools_app.models import MCPServer
    from tools_app.process_registry import get_registry
    from tools_app.registry import ToolContext, ToolRegistry

    context = ToolContext(run_id=0, workspace=scratch / "workspaces", timeout=30)
    builtin = get_registry()
    rows = [
        (
            "builtin finish_task (registry)",
            timed(args.calls, lambda: builtin.call("finish_task", {"result": "x"}, context)),
        ),
    ]

    http = EverythingHttpServer("streamableHttp", scratch).start()
    try:
        stdio = MCPServer.objects.create(
            name="stdio", transport="stdio", command=node(), args=everything_stdio_args()
        )
        remote = MCPServer.objects.create(name="http", transport="streamable_http", url=http.url)
        registry = ToolRegistry()
        pool = MCPPool(registry, DatabaseStore(), poll_interval=60, health_interval=60)
        pool.start()
        pool.wait_ready(60)
        for server in (stdio, remote):
            name = f"{server.name}.echo"
            assert name in registry.names(), (
                f"{server.name}: {MCPServer.objects.get(pk=server.pk).last_error}"
            )
            rows.append(
                (
                    f"{server.transport} echo via AgentDesk",
                    timed(
                        args.calls,
                        lambda name=name: registry.call(name, {"message": "ping"}, context),
                    ),
                )
            )
            rows.append(
                (
                    f"{server.transport} echo, direct SDK",
                    asyncio.run(
                        direct_samples(MCPServer.objects.get(pk=server.pk).spec(), args.calls)
                    ),
                )
            )
        pool.close()
    finally:
        http.stop()
        if valkey is not None:
            valkey.stop()

    print(f"tool_calls: {args.calls} calls each")
    for label, samples in rows:
        print(f"  {label:34s} {summary(samples)}")
    medians = {label: statistics.median(samples) for label, samples in rows}
    for transport in ("stdio", "streamable_http"):
        overhead = (
            medians[f"{transport} echo via AgentDesk"] - medians[f"{transport} echo, direct SDK"]
        )
        print(f"  platform overhead, {transport:16s} {overhead:+7.3f} ms at p50")


if __name__ == "__main__":
    main()
