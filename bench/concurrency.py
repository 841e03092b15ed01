"""How many runs make progress at once: the stack started as `uv run go` starts it (its worker,
its pool and concurrency, its web server), a scripted OpenAI-compatible server whose answers
take a set time (tests/support/llm_server.py), and N one-step runs (the fast path: one model
turn that answers) submitted at once through the service layer.

Prints, for N runs with answers of --latency seconds: the wall time against one run alone,
the peak of model requests in flight (as the server counted them), the worker processes' peak
RSS (all of them together), and on PostgreSQL the most connections one worker process held
(pg_stat_activity); and the target of issue 31: the N finish within max(3x one run's time,
1.3 x N / the runs/s measured with instant answers in the same invocation), with at least
0.8 N requests in flight at the peak, under 1 GB of worker RSS, at most 20 connections per
worker process.

    uv run python bench/concurrency.py [--runs 100] [--latency 1.0]
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test REDIS_URL=redis://127.0.0.1:6379/0 \\
        uv run python bench/concurrency.py

SQLite and an embedded Valkey in a temporary VAR_DIR unless DATABASE_URL / REDIS_URL are set;
WORKER_POOL / WORKER_CONCURRENCY as `go` reads them (unset: its defaults).
"""

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.request import Request, urlopen

from harness import start_django  # noqa: E402  (bench/ is on sys.path when run as a script)
from run_start import free_port, spawn, wait_for

PAGE = os.sysconf("SC_PAGE_SIZE")
RSS_LIMIT_MB = 1024
CONNECTIONS_LIMIT = 20


class LLM:
    """The scripted server, driven over HTTP."""

    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}"

    def _post(self, path: str, body: dict) -> None:
        request = Request(
            self.url + path, json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        urlopen(request, timeout=10).read()

    def answer_after(self, seconds: float) -> None:
        """Every request is answered after `seconds`; what was counted so far is forgotten."""
        self._post("/_reset", {})
        reply = (
            {"content": "The answer.", "delay": seconds} if seconds else {"content": "The answer."}
        )
        self._post("/_script", {"rules": [{"replies": [reply], "repeat": True}]})

    def peak_in_flight(self) -> int:
        return json.loads(urlopen(self.url + "/_in_flight", timeout=10).read())["peak"]


def tree_of(root: int) -> list[int]:
    """`root` and every process under it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat[stat.rindex(")") + 2 :].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def workers_of(go: int) -> list[int]:
    pids = []
    for pid in tree_of(go):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"celery" in command and b"worker" in command:
            pids.append(pid)
    return pids


def rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
    return total / 2**20


class Sampler(threading.Thread):
    """The workers' RSS and, on PostgreSQL, each worker process's connections, every 0.1 s."""

    def __init__(self, go: int, database_url: str) -> None:
        super().__init__(daemon=True)
        self.go = go
        self.postgres = database_url if database_url.startswith("postgres") else ""
        self.stop = threading.Event()
        self.peak_rss = 0.0
        self.peak_connections = 0

    def run(self) -> None:
        cursor = None
        if self.postgres:
            import psycopg

            cursor = psycopg.connect(self.postgres, autocommit=True).cursor()
        while not self.stop.wait(0.1):
            self.peak_rss = max(self.peak_rss, rss_mb(workers_of(self.go)))
            if cursor is not None:
                cursor.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE"
                    " 'agentdesk worker %%' GROUP BY application_name"
                )
                counts = [row[0] for row in cursor.fetchall()]
                self.peak_connections = max([self.peak_connections, *counts])


def submit(owner, runs: int, label: str) -> list[int]:
    """Submit `runs` runs at once, as many people or clients would: from 16 threads."""
    from django.db import connection

    from agents_app.runs.services import task_submit

    def one(n: int) -> int:
        try:
            return task_submit(owner=owner, interface="api", text=f"{label} {n}", fast_path=True).pk
        finally:
            connection.close()

    with ThreadPoolExecutor(16) as pool:
        return list(pool.map(one, range(runs)))


def finish(ids: list[int], timeout: float) -> float:
    """Seconds from now until every run of `ids` has finished (all must succeed)."""
    from agents_app.models import Run

    started = time.perf_counter()
    pending = Run.objects.filter(pk__in=ids, finished_at__isnull=True)
    wait_for(lambda: not pending.exists(), timeout, "the runs did not finish")
    elapsed = time.perf_counter() - started
    failed = list(
        Run.objects.filter(pk__in=ids)
        .exclude(status="succeeded")
        .values_list("status", "error_code")[:3]
    )
    if failed:
        raise SystemExit(f"concurrency: runs did not succeed: {failed}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per model answer")
    args = parser.parse_args()

    llm_port, web_port = free_port(), free_port()
    os.environ.update({"LLM_BASE_URL": f"http://127.0.0.1:{llm_port}/v1", "LLM_MODEL": "scripted"})
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    scratch, valkey = start_django("concurrency")
    from django.contrib.auth import get_user_model
    from django.db import connection

    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PORT": str(web_port)}
    llm = spawn(
        ["-m", "tests.support.llm_server", "--port", str(llm_port)], scratch / "llm.log", env
    )
    go_log = scratch / "go.log"
    go = spawn(["-c", "from config.launcher import main; main()"], go_log, env)
    sampler = Sampler(go.pid, os.environ["DATABASE_URL"])
    try:
        server = LLM(llm_port)
        wait_for(lambda: "AgentDesk is running" in go_log.read_text(), 120, "go did not start")
        owner, _ = get_user_model().objects.get_or_create(username="bench")
        server.answer_after(0)
        # Warm: the worker imports and connects on its first runs.
        finish(submit(owner, 4, "warm"), 120)
        baseline_rss = rss_mb(workers_of(go.pid))

        started = time.perf_counter()
        instant = submit(owner, args.runs, "instant")
        finish(instant, 600)
        rate = args.runs / (time.perf_counter() - started)

        server.answer_after(args.latency)
        started = time.perf_counter()
        alone = submit(owner, 1, "alone")
        finish(alone, 120)
        one = time.perf_counter() - started

        server.answer_after(args.latency)
        sampler.start()
        started = time.perf_counter()
        ids = submit(owner, args.runs, "together")
        finish(ids, 600)
        together = time.perf_counter() - started
        sampler.stop.set()
        sampler.join()
        peak = server.peak_in_flight()
    finally:
        for process in (go, llm):
            os.killpg(process.pid, signal.SIGTERM)
        for process in (go, llm):
            process.wait(timeout=60)
        if valkey is not None:
            valkey.stop()

    pool = os.environ.get("WORKER_POOL") or "threads (go's default)"
    concurrency = os.environ.get("WORKER_CONCURRENCY") or "go's default"
    limit = max(3 * one, 1.3 * args.runs / rate)
    checks = {
        f"within {limit:.1f} s": together <= limit,
        f">= {0.8 * args.runs:.0f} in flight": peak >= 0.8 * args.runs,
        f"RSS < {RSS_LIMIT_MB} MB": sampler.peak_rss < RSS_LIMIT_MB,
    }
    if sampler.postgres:
        checks[f"<= {CONNECTIONS_LIMIT} connections"] = sampler.peak_connections <= 20
    print(
        f"concurrency: {args.runs} one-step runs, answers of {args.latency:g} s,"
        f" {connection.vendor} + Redis, pool {pool}, concurrency {concurrency}"
    )
    print(f"  instant answers   {rate:7.1f} runs/s ({args.runs} runs)")
    print(f"  one run alone     {one:7.2f} s")
    print(f"  {args.runs} at once     {together:7.2f} s   ({together / one:.1f}x one run)")
    print(f"  peak in flight    {peak:7d} model requests")
    print(
        f"  workers' RSS      {sampler.peak_rss:7.0f} MB at the peak ({baseline_rss:.0f} MB idle)"
    )
    if sampler.postgres:
        print(f"  connections       {sampler.peak_connections:7d} at most per worker process")
    verdict = "met" if all(checks.values()) else "not met"
    failed = [name for name, ok in checks.items() if not ok]
    print(
        f"  target            {', '.join(checks)}: {verdict}"
        + (f" ({', '.join(failed)} missed)" if failed else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
