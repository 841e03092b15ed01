"""Many server-sent event streams on one run, on one web process: N clients open the run's
event stream (`Accept: text/event-stream`, one API key, SSE_STREAMS_PER_USER raised for the
bench) on one real daphne; once every stream has its backlog, events are committed as the engine
commits them (runs.writer.locked_run, published on commit by the process's sender thread) and
the run ends with its `result`. Prints how many streams started, how many got the result (the
goal: all), how long the last one waited for it after its commit, and the daphne process's
memory (RSS) before the streams, with them open, and after they ended.

    uv run python bench/sse_streams.py [--streams 500] [--events 20]

Before the streams of a process shared one subscription (streaming/hub), each stream joined,
read and left the run's group through the channel layer's pool of 100 Redis connections: at 500
streams 59 failed with MaxConnectionsError and never started. SQLite + an embedded Valkey in a
temporary directory unless DATABASE_URL / REDIS_URL are set.
"""

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

from harness import ROOT, start_django  # noqa: E402  (bench/ is on sys.path when run as a script)

START_SECONDS = 90  # daphne imports the whole app before it listens
OPEN_SECONDS = 60  # for every stream to have its backlog
RESULT_SECONDS = 30  # for every stream to have the result after its commit


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Stream:
    """One client: a raw HTTP/1.1 request, the stream's text read as it comes."""

    def __init__(self, port: int, path: str, key: str) -> None:
        self.port, self.path, self.key = port, path, key
        self.text = ""
        self.status = 0
        self.started = asyncio.Event()  # its backlog (the run's first event) arrived
        self.result_at: float | None = None

    async def run(self) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        writer.write(
            (
                f"GET {self.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Authorization: Bearer {self.key}\r\nAccept: text/event-stream\r\n"
                "Connection: close\r\n\r\n"
            ).encode()
        )
        await writer.drain()
        try:
            while chunk := await reader.read(65536):
                self.text += chunk.decode(errors="replace")
                if not self.status and "\r\n" in self.text:
                    self.status = int(self.text.split(" ", 2)[1])
                if "event: run_queued" in self.text:
                    self.started.set()
                if self.result_at is None and "event: result" in self.text:
                    self.result_at = time.perf_counter()
                    return
        finally:
            writer.close()


async def wait_all(events: list[asyncio.Event], timeout: float) -> int:
    """Wait up to `timeout` for every event; how many were set."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in events)), timeout)
    return sum(e.is_set() for e in events)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=500)
    parser.add_argument("--events", type=int, default=20, help="events before the result")
    args = parser.parse_args()

    scratch, valkey = start_django("sse")
    from django.contrib.auth import get_user_model
    from django.db import connection

    from agents_app.models import ApiKey, Run, RunStatus, Task
    from agents_app.runs.writer import locked_run
    from tests.support.processes import free_port

    user, _ = get_user_model().objects.get_or_create(username="sse-bench")
    task = Task.objects.create(owner=user, text="sse benchmark")
    run = Run.objects.create(task=task, owner=user, max_tokens=1, max_tool_calls=1)
    with locked_run(run.pk) as w:
        w.event("run_queued", {})
    raw_key = ApiKey.generate()
    key = ApiKey(user=user, name="bench")
    key.set_key(raw_key)
    key.save()

    port = free_port()
    env = {**os.environ, "SSE_STREAMS_PER_USER": str(args.streams + 10)}
    daphne = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port)]
        + ["config.asgi:application"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(scratch / "daphne.log").open("w"),
    )

    async def bench() -> tuple[list[Stream], float, float, float, float]:
        deadline = time.monotonic() + START_SECONDS
        while True:  # daphne listens once it has imported the app
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                break
            except OSError:
                if time.monotonic() > deadline or daphne.poll() is not None:
                    raise SystemExit("sse_streams: daphne did not start") from None
                await asyncio.sleep(0.1)
        idle = rss_mb(daphne.pid)
        path = f"/api/v1/runs/{run.pk}/events"
        streams = [Stream(port, path, raw_key) for _ in range(args.streams)]
        tasks = [asyncio.ensure_future(s.run()) for s in streams]
        await wait_all([s.started for s in streams], OPEN_SECONDS)
        open_rss = rss_mb(daphne.pid)

        def finish() -> float:
            for n in range(args.events):
                with locked_run(run.pk) as w:
                    w.event("progress_update", {"n": n})
            with locked_run(run.pk) as w:
                w.event("result", {"success": True})
                Run.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED)
            return time.perf_counter()

        committed = await asyncio.to_thread(finish)
        await asyncio.wait(tasks, timeout=RESULT_SECONDS)
        for task in tasks:
            task.cancel()
        after = rss_mb(daphne.pid)
        return streams, committed, open_rss, after, idle

    try:
        streams, committed, open_rss, after, idle = asyncio.run(bench())
    finally:
        daphne.terminate()
        daphne.wait(30)
        if valkey is not None:
            valkey.stop()

    started = sum(s.started.is_set() for s in streams)
    refused = sum(s.status not in (0, 200) for s in streams)
    got = [s.result_at - committed for s in streams if s.result_at is not None]
    print(
        f"sse_streams: {args.streams} event streams on one run, one daphne, "
        f"{connection.vendor} + Redis, {args.events} events then the result"
    )
    print(f"  started (backlog sent)   {started} of {args.streams}, refused {refused}")
    verdict = "met" if len(got) == args.streams else "not met"
    print(f"  got the result           {len(got)} of {args.streams}   goal all: {verdict}")
    if got:
        print(f"  result commit → last     {max(got) * 1000:.0f} ms")
    print(
        f"  daphne RSS               {idle:.0f} MB idle, {open_rss:.0f} MB with the streams open, "
        f"{after:.0f} MB after"
    )
    log = (scratch / "daphne.log").read_text(errors="replace").splitlines()
    for level in ("ERROR", "WARNING"):
        lines = [line for line in log if f" {level} " in line]
        if lines:
            print(f"  daphne logged {len(lines)} {level} lines, the first: {lines[0][24:200]}")
    return 0 if len(got) == args.streams else 1


if __name__ == "__main__":
    sys.exit(main())
