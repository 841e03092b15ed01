"""How many one-step runs a second real Celery workers carry through, beside raw Celery.

For 1, 2 and 4 worker processes (one `celery worker` with that many pool processes, as `go`
starts it): N runs submitted at once through the service layer (`task_submit`, the fast path:
one step whose one model turn answers, the test suite's scripted LLM server), timed from the
first submit to the last run finished; then N raw Celery tasks that only count themselves
(bench/celery_noop.py) on the same broker and workers, timed the same way. Prints runs/s, raw
tasks/s, their ratio, and how the runs/s grow from 1 to 2 to 4 processes; and where the
processors' time went for each (bench/cpu.py: CPU ms a run and a raw task in the workers, the
LLM server, PostgreSQL, Redis, this process submitting, anything else, and how busy the
processors were), which says what saturates first. Meant for PostgreSQL and Redis (with SQLite,
writers wait for each other's lock):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test REDIS_URL=redis://127.0.0.1:6379/0 \\
        uv run python bench/throughput.py [--runs 200] [--processes 1 2 4]
"""

import argparse
import os
import signal
import sys
import time
from typing import Any

from cpu import Group, report, snapshot
from harness import start_django  # noqa: E402  (bench/ is on sys.path when run as a script)
from run_start import free_port, spawn, wait_for

TARGET_RAW = 0.5  # issue 16: runs/s at least half of raw Celery's tasks/s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args()

    port = free_port()
    os.environ.update({"LLM_BASE_URL": f"http://127.0.0.1:{port}/v1", "LLM_MODEL": "scripted"})
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    scratch, valkey = start_django("throughput")
    from django.db import connection

    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    llm = spawn(["-m", "tests.support.llm_server", "--port", str(port)], scratch / "llm.log", env)
    results, spent = [], []
    try:
        for processes in args.processes:
            runs_per_second, raw_per_second, cpu = measure(
                processes, args.runs, scratch, env, llm.pid
            )
            results.append((processes, runs_per_second, raw_per_second))
            spent.append((processes, cpu))
    finally:
        os.killpg(llm.pid, signal.SIGTERM)
        llm.wait(timeout=30)
        if valkey is not None:
            valkey.stop()

    print(
        f"throughput: {args.runs} one-step runs and {args.runs} raw Celery tasks per setting, "
        f"{connection.vendor} + Redis"
    )
    base = results[0][1]
    for processes, runs_per_second, raw_per_second in results:
        print(
            f"  {processes} worker process{'es' if processes > 1 else '  '}  runs "
            f"{runs_per_second:7.1f}/s   raw Celery {raw_per_second:7.1f}/s   "
            f"ratio {runs_per_second / raw_per_second:.2f}x   "
            f"vs 1 process {runs_per_second / base:.2f}x"
        )
    for processes, (runs_cpu, raw_cpu) in spent:
        print(f"  {processes} worker process{'es' if processes > 1 else ''}")
        print(f"    {runs_cpu}")
        print(f"    {raw_cpu}")
    worst = min(r / raw for _, r, raw in results)
    print(
        f"  target      runs/s >= {TARGET_RAW}x raw Celery: "
        f"{'met' if worst >= TARGET_RAW else 'not met'} (lowest {worst:.2f}x)"
    )
    return 0


def measure(processes: int, runs: int, scratch, env, llm: int) -> tuple[float, float, Any]:
    """(runs/s, raw tasks/s, where the CPU went for each) with a worker of `processes` pool
    processes."""
    log = scratch / f"worker-{processes}.log"
    worker = spawn(
        [
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-I",
            "bench.celery_noop",
            "--loglevel=INFO",
            f"--concurrency={processes}",
            "--prefetch-multiplier=1",
        ],
        log,
        env,
    )
    try:
        wait_for(lambda: " ready." in log.read_text(), 90, "the worker was not ready")
        groups = [
            Group("workers", roots=(worker.pid,)),
            Group("LLM server", roots=(llm,)),
            Group("PostgreSQL", commands=("postgres",)),
            Group("Redis", commands=("redis-server", "valkey-server")),
            Group("submitting", roots=(os.getpid(),)),
        ]
        runs_per_second, runs_cpu = run_rate(runs, processes, groups)
        raw_per_second, raw_cpu = raw_rate(runs, groups)
        return runs_per_second, raw_per_second, (runs_cpu, raw_cpu)
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(timeout=60)


def run_rate(runs: int, processes: int, groups: list[Group]) -> tuple[float, str]:
    from django.contrib.auth import get_user_model

    from agents_app.core import dispatch
    from agents_app.models import Run
    from agents_app.runs.services import task_submit

    dispatch.warm()
    owner, _ = get_user_model().objects.get_or_create(username="bench")
    # A few runs first, unmeasured: each pool process imports and connects on its first task.
    warm = [
        task_submit(owner=owner, interface="api", text="Write the answer", fast_path=True).pk
        for _ in range(2 * processes)
    ]
    warming = Run.objects.filter(pk__in=warm, finished_at__isnull=True)
    wait_for(lambda: not warming.exists(), 120, "the first runs did not finish")
    before, started = snapshot(groups), time.perf_counter()
    ids = [
        task_submit(owner=owner, interface="api", text=f"Write the answer {n}", fast_path=True).pk
        for n in range(runs)
    ]
    pending = Run.objects.filter(pk__in=ids, finished_at__isnull=True)
    wait_for(lambda: not pending.exists(), 600, "the runs did not finish")
    elapsed, after = time.perf_counter() - started, snapshot(groups)
    failed = Run.objects.filter(pk__in=ids).exclude(status="succeeded").count()
    if failed:
        raise SystemExit(f"throughput: {failed} of {runs} runs did not succeed")
    return runs / elapsed, report(before, after, runs, "run ")


def raw_rate(tasks: int, groups: list[Group]) -> tuple[float, str]:
    import redis
    from celery import current_app
    from celery_noop import COUNTER
    from django.conf import settings

    client = redis.Redis.from_url(settings.REDIS_URL)
    client.delete(COUNTER)
    before, started = snapshot(groups), time.perf_counter()
    for _ in range(tasks):
        current_app.send_task("bench.noop")
    wait_for(lambda: int(client.get(COUNTER) or 0) >= tasks, 300, "the raw tasks did not finish")
    elapsed, after = time.perf_counter() - started, snapshot(groups)
    return tasks / elapsed, report(before, after, tasks, "task")


if __name__ == "__main__":
    sys.exit(main())
