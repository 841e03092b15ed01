"""How long a queued run waits for an idle worker: N tasks submitted one after another, as the
API submits them, to one real Celery worker (prefork, concurrency 2, as `go` starts it) that
has nothing else to do. Prints the wait from the run's creation to its start (`started_at`) at
p50, p90, p99 and max, and how many waited longer than 0.5 s. Like a web process, the bench
first warms its task queue (`dispatch.warm`, which config/asgi.py runs as daphne starts). The LLM is the test suite's
scripted stand-in (tests/support/llm_server.py, its demo script), so a run's own work is short.

Run: `uv run python bench/run_start.py [--runs 100]` (SQLite and an embedded Valkey in a
temporary VAR_DIR unless DATABASE_URL / REDIS_URL are set).
"""

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from harness import ROOT, start_django  # noqa: E402  (bench/ is on sys.path when run as a script)

TARGET = 0.5  # seconds: an idle worker starts a queued run within this


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def spawn(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, *args],
        cwd=ROOT,
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"run_start: {what} within {timeout:g} s")
        time.sleep(0.05)


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args()

    port = free_port()
    os.environ.update({"LLM_BASE_URL": f"http://127.0.0.1:{port}/v1", "LLM_MODEL": "scripted"})
    scratch, valkey = start_django("start")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    llm = spawn(["-m", "tests.support.llm_server", "--port", str(port)], scratch / "llm.log", env)
    worker_log = scratch / "worker.log"
    worker = spawn(
        ["-m", "celery", "-A", "config", "worker", "--loglevel=INFO", "--concurrency=2"],
        worker_log,
        env,
    )
    try:
        wait_for(lambda: " ready." in worker_log.read_text(), 60, "the worker was not ready")
        waits = measure(args.runs)
    finally:
        for process in (worker, llm):
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)
        if valkey is not None:
            valkey.stop()
    late = sum(wait > TARGET for wait in waits)
    print(f"run_start: {len(waits)} runs, one at a time, to an idle worker (concurrency 2)")
    print(
        "  wait for a worker   "
        f"p50 {percentile(waits, 0.5) * 1000:.0f} ms, p90 {percentile(waits, 0.9) * 1000:.0f} ms, "
        f"p99 {percentile(waits, 0.99) * 1000:.0f} ms, max {max(waits) * 1000:.0f} ms"
    )
    slow = ", ".join(f"#{n + 1} {w:.2f} s" for n, w in enumerate(waits) if w > TARGET)
    print(f"  over {TARGET:g} s          {late} of {len(waits)}{f' ({slow})' if slow else ''}")
    print(
        f"  target              p99 <= {TARGET:g} s: {'met' if late <= len(waits) // 100 else 'MISSED'}"
    )
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


def measure(runs: int) -> list[float]:
    from django.contrib.auth import get_user_model

    from agents_app.core import dispatch
    from agents_app.models import Run
    from agents_app.runs.services import task_submit

    # As a web process does when it starts (config/asgi.py): the first run then does not
    # wait for Celery to finalise and connect.
    dispatch.warm()
    owner, _ = get_user_model().objects.get_or_create(username="bench")
    waits = []
    for number in range(runs):
        run = task_submit(
            owner=owner, interface="api", text=f"Write the answer {number}", fast_path=True
        )
        finished = Run.objects.filter(pk=run.pk, finished_at__isnull=False)
        wait_for(
            finished.exists,
            60,
            f"run {run.pk} did not finish",
        )
        run.refresh_from_db()
        if run.started_at is None:
            raise SystemExit(f"run_start: run {run.pk} ended {run.status} without starting")
        waits.append((run.started_at - run.created_at).total_seconds())
    return waits


if __name__ == "__main__":
    sys.exit(main())
