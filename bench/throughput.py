"""How many one-step runs a second real Celery workers carry through, AgentDesk against a
LangGraph agent doing the same work on the same workers (issue 31).

The stack as `go` starts it: WORKER_PROCESSES `celery worker` processes (here 1, then 2), each
`--pool=threads --concurrency=WORKER_CONCURRENCY` (config/launcher.py's worker_arguments; 100
threads unless WORKER_CONCURRENCY or --concurrency says otherwise), on PostgreSQL and Redis;
the test suite's scripted OpenAI-compatible server (tests/support/llm_server.py) answering
every request with "The answer." after a set delay (--latencies, in ms: 0 and 200).

  AgentDesk  N tasks submitted through the service layer (`task_submit(..., fast_path=True)`)
             from 16 threads (each keeping its database connection, as a web process with
             persistent connections does), by as many people as it takes for none to
             pass RUNS_RUNNING_PER_USER (no run waits its turn: the peer has no such turn).
             A run is one step whose one model turn answers in prose, no tool called: the
             worker's rows, events, audit and lease; the model asked through the official
             OpenAI SDK, streamed, with its five tools offered (http_get, list_files,
             read_file, write_file, finish_task). Done when every run has finished
             (all must succeed).
  LangGraph  N Celery tasks sent from 16 threads to the same queue and the same workers
             (bench/langgraph_peer.py, loaded with -I), one run each: a StateGraph agent
             (`agent` asks the model; `tools` were a tool called, then back) with
             langgraph.checkpoint.postgres.PostgresSaver on the same database (its tables in
             a schema of its own, dropped at the end; a pool of connections per worker
             process no larger than AgentDesk's), checkpointing with LangGraph's default
             durability. Its one model turn is the same request through the same SDK: the
             system prompt, tools and max_tokens AgentDesk's run sent (read back from the
             scripted server), streamed with usage; it answers in prose, so no tool is
             called either. Done when every task has counted itself in Redis.

For each (latency, worker processes): runs/s from the first submit to the last run done, and
processor ms a run as bench/cpu.py counts them (the workers, the LLM server, PostgreSQL,
Redis, this process submitting; "CPU ms a run" below is their sum, without "other", the rest
of a busy machine). A few runs of each first, unmeasured: imports, connections. Targets:
at 200 ms, AgentDesk >= 1.0x LangGraph's runs/s on 2 worker processes; at 0 ms, >= 1.0x its
runs/s and <= 1.0x its CPU ms a run (every process count measured); where the 0-ms one is
missed, both breakdowns side by side.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test REDIS_URL=redis://127.0.0.1:6379/0 \\
        uv run --group bench python bench/throughput.py [--runs 200] [--processes 1 2] \\
        [--latencies 0 200] [--concurrency 100]

DATABASE_URL must be PostgreSQL (unset: the URL above); REDIS_URL unset, an embedded Valkey.
Its workers take a queue and control exchange of their own (CELERY_QUEUE,
CELERY_CONTROL_EXCHANGE: bench-throughput-<pid>), apart from any other worker on that Redis.
"""

import argparse
import json
import math
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.request import Request, urlopen

from cpu import Group, Snapshot, report, snapshot
from harness import in_threads, start_django  # noqa: E402  (bench/ is on sys.path as a script)
from run_start import free_port, spawn, wait_for

PG_URL = "postgres://postgres@127.0.0.1:5432/test"
TARGET_RATE = 1.0  # issue 31: AgentDesk's runs/s at least LangGraph's
TARGET_CPU = 1.0  # and, at 0 ms, its processor time a run at most LangGraph's
GROUPS = ("workers", "LLM server", "PostgreSQL", "Redis", "submitting")


@dataclass
class Measure:
    rate: float  # runs/s
    before: Snapshot
    after: Snapshot
    runs: int

    def ms(self, group: str) -> float:
        spent = self.after.by_group[group] - self.before.by_group[group]
        return spent * 1000 / self.runs if spent == spent else float("nan")

    def cpu(self) -> float:
        """CPU ms a run in the groups seen (not "other")."""
        return sum(v for g in GROUPS if (v := self.ms(g)) == v)

    def busy(self) -> float:
        return (self.after.busy - self.before.busy) * 1000 / self.runs

    def line(self) -> str:
        return report(self.before, self.after, self.runs, "run ")


def main() -> int:
    from config.env import worker_concurrency

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--latencies", type=int, nargs="+", default=[0, 200], help="model ms")
    parser.add_argument("--concurrency", type=int, default=worker_concurrency())
    args = parser.parse_args()

    url = os.environ.setdefault("DATABASE_URL", PG_URL)
    if not url.startswith(("postgres://", "postgresql://")):
        parser.error(f"DATABASE_URL is not a PostgreSQL URL: {url}")
    port = free_port()
    os.environ.update({"LLM_BASE_URL": f"http://127.0.0.1:{port}/v1", "LLM_MODEL": "scripted"})
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    # A queue and control exchange of its own: other workers on the same Redis (another
    # checkout's, a test's) would otherwise take these runs, and these workers theirs.
    os.environ["CELERY_QUEUE"] = os.environ["CELERY_CONTROL_EXCHANGE"] = (
        f"bench-throughput-{os.getpid()}"
    )
    scratch, valkey = start_django("throughput")
    from importlib.metadata import version

    from django.conf import settings

    schema = f"langgraph_throughput_{os.getpid()}"
    checkpoints, drop = create_schema(url, schema)
    request_file = scratch / "peer-request.json"
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "LANGGRAPH_PEER_SCHEMA": schema,
        "LANGGRAPH_PEER_REQUEST": str(request_file),
    }
    llm = spawn(["-m", "tests.support.llm_server", "--port", str(port)], scratch / "llm.log", env)
    server = LLM(port)
    owners = make_owners(math.ceil(args.runs / settings.RUNS_RUNNING_PER_USER))
    rows: dict[tuple[int, int], tuple[Measure, Measure]] = {}
    try:
        wait_for(lambda: ping(server), 30, "the LLM server did not answer")
        for processes in args.processes:
            workers = start_workers(processes, args.concurrency, scratch, env)
            try:
                groups = [
                    Group("workers", roots=tuple(w.pid for w in workers)),
                    Group("LLM server", roots=(llm.pid,)),
                    Group("PostgreSQL", commands=("postgres",)),
                    Group("Redis", commands=("redis-server", "valkey-server")),
                    Group("submitting", roots=(os.getpid(),)),
                ]
                for latency in args.latencies:
                    server.answer_after(latency / 1000)
                    ours = agentdesk(args.runs, processes, groups, owners, f"{latency}/{processes}")
                    if not request_file.exists():
                        capture(server, request_file)
                    theirs = peer(args.runs, processes, groups, f"{latency}/{processes}")
                    checked(
                        checkpoints, f"{os.getpid()}-measured-{latency}/{processes}-", args.runs
                    )
                    rows[latency, processes] = (ours, theirs)
            finally:
                stop(workers)
    finally:
        os.killpg(llm.pid, signal.SIGTERM)
        llm.wait(timeout=30)
        drop()
        if valkey is not None:
            valkey.stop()

    print(
        f"throughput: {args.runs} one-step runs of each a row, PostgreSQL + Redis, worker "
        f"processes --pool=threads --concurrency={args.concurrency} (langgraph "
        f"{version('langgraph')}, PostgresSaver {version('langgraph-checkpoint-postgres')})"
    )
    for (latency, processes), (ours, theirs) in rows.items():
        print(
            f"  model {latency:3d} ms  {processes} worker process{'es' if processes > 1 else '  '}"
            f"  AgentDesk {ours.rate:6.1f} runs/s {ours.cpu():5.1f} CPU ms a run   "
            f"LangGraph {theirs.rate:6.1f} runs/s {theirs.cpu():5.1f} CPU ms a run   "
            f"{ours.rate / theirs.rate:.2f}x runs/s, {ours.cpu() / theirs.cpu():.2f}x CPU ms"
        )
    for (latency, processes), (ours, theirs) in rows.items():
        print(f"  model {latency} ms, {processes} worker process{'es' if processes > 1 else ''}")
        print(f"    AgentDesk {ours.line()}")
        print(f"    LangGraph {theirs.line()}")

    slow = rows.get((200, 2))
    if slow is None:
        print("  target 200 ms: not measured (needs --latencies 200 and --processes 2)")
    else:
        ratio = slow[0].rate / slow[1].rate
        print(
            f"  target 200 ms: AgentDesk >= {TARGET_RATE}x LangGraph's runs/s on 2 worker "
            f"processes: {'met' if ratio >= TARGET_RATE else 'not met'} ({ratio:.2f}x)"
        )
    instant = {p: pair for (latency, p), pair in rows.items() if latency == 0}
    missed = [
        p
        for p, (ours, theirs) in instant.items()
        if ours.rate < TARGET_RATE * theirs.rate or ours.cpu() > TARGET_CPU * theirs.cpu()
    ]
    if not instant:
        print("  target 0 ms: not measured (needs --latencies 0)")
    else:
        figures = "; ".join(
            f"{p} process{'es' if p > 1 else ''} {ours.rate / theirs.rate:.2f}x runs/s, "
            f"{ours.cpu() / theirs.cpu():.2f}x CPU ms"
            for p, (ours, theirs) in instant.items()
        )
        print(
            f"  target 0 ms: AgentDesk >= {TARGET_RATE}x LangGraph's runs/s and <= "
            f"{TARGET_CPU}x its CPU ms a run: {'not met' if missed else 'met'} ({figures})"
        )
    for p in missed:
        ours, theirs = instant[p]
        print(f"  where the processor time went, 0 ms, {p} worker process{'es' if p > 1 else ''}")
        print(f"    {'CPU ms a run':<14}{'AgentDesk':>10}{'LangGraph':>11}")
        for group in GROUPS:
            print(f"    {group:<14}{ours.ms(group):10.2f}{theirs.ms(group):11.2f}")
        print(f"    {'sum':<14}{ours.cpu():10.2f}{theirs.cpu():11.2f}")
        print(
            f"    {'other':<14}{ours.busy() - ours.cpu():10.2f}{theirs.busy() - theirs.cpu():11.2f}"
        )
    return 0


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
        """Every request is answered "The answer." after `seconds`; what it recorded is
        forgotten."""
        self._post("/_reset", {})
        reply = {"content": "The answer.", **({"delay": seconds} if seconds else {})}
        self._post("/_script", {"rules": [{"replies": [reply], "repeat": True}]})


def ping(server: LLM) -> bool:
    try:
        urlopen(server.url + "/v1/models", timeout=1).read()
        return True
    except OSError:
        return False


def create_schema(url: str, schema: str):
    """The peer's tables in `schema`, made here; returns what counts the threads checkpointed
    whose id starts so, and what drops them."""
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg import Connection, sql
    from psycopg.rows import dict_row

    conn = Connection.connect(
        url,
        autocommit=True,
        prepare_threshold=0,
        row_factory=dict_row,
        options=f"-c search_path={schema}",
    )
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    PostgresSaver(conn).setup()

    def threads(prefix: str) -> int:
        query = "SELECT count(DISTINCT thread_id) AS n FROM checkpoints WHERE thread_id LIKE %s"
        return conn.execute(query, [prefix + "%"]).fetchone()["n"]

    def drop() -> None:
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
        conn.close()

    return threads, drop


def checked(checkpoints, prefix: str, runs: int) -> None:
    """Every LangGraph run left its checkpoints in PostgreSQL."""
    found = checkpoints(prefix)
    if found != runs:
        raise SystemExit(f"throughput: {found} of {runs} LangGraph runs checkpointed")


def make_owners(count: int) -> list:
    from django.contrib.auth import get_user_model

    users = get_user_model().objects
    return [users.get_or_create(username=f"bench-{n}")[0] for n in range(max(1, count))]


def start_workers(processes: int, concurrency: int, scratch: Path, env: dict) -> list:
    """`processes` workers as `go` starts them, each loading the peer's task too."""
    from django.conf import settings

    from config.launcher import worker_arguments

    workers, logs = [], []
    for number in range(1, processes + 1):
        log = scratch / f"worker-{processes}-{number}.log"
        arguments = worker_arguments("threads", concurrency, f"bench-{number}@%h")
        queue = f"--queues={settings.CELERY_TASK_DEFAULT_QUEUE}"
        workers.append(spawn([*arguments, queue, "-I", "bench.langgraph_peer"], log, env))
        logs.append(log)
    try:
        wait_for(
            lambda: all(" ready." in log.read_text() for log in logs),
            120,
            "the workers were not ready",
        )
    except BaseException:
        stop(workers)
        raise
    return workers


def stop(workers: list) -> None:
    for worker in workers:
        os.killpg(worker.pid, signal.SIGTERM)
    for worker in workers:
        worker.wait(timeout=60)


def agentdesk(runs: int, processes: int, groups: list[Group], owners: list, label: str) -> Measure:
    from agents_app.core import dispatch
    from agents_app.models import Run
    from agents_app.runs.services import task_submit

    dispatch.warm()

    def submit(prefix: str, count: int) -> list[int]:
        return in_threads(
            lambda n: (
                task_submit(
                    owner=owners[n % len(owners)],
                    interface="api",
                    text=f"Request {prefix} {n}",
                    fast_path=True,
                ).pk
            ),
            count,
        )

    def finish(ids: list[int]) -> None:
        # Polled by their owners and id range, not by a list of ids: a query with hundreds of
        # values, sent 20 times a second, cost this process more than submitting them (the
        # peer's runs count themselves in Redis).
        mine = Run.objects.filter(owner__in=owners, pk__gte=min(ids), pk__lte=max(ids))
        pending = mine.filter(finished_at__isnull=True)
        wait_for(lambda: not pending.exists(), 600, "the runs did not finish")
        failed = list(mine.exclude(status="succeeded").values_list("status", "error_code")[:3])
        if failed:
            raise SystemExit(f"throughput: AgentDesk runs did not succeed: {failed}")

    finish(submit(f"warm {label}", 4 * processes))  # unmeasured: imports, connections
    before, started = snapshot(groups), time.perf_counter()
    finish(submit(label, runs))
    elapsed, after = time.perf_counter() - started, snapshot(groups)
    return Measure(runs / elapsed, before, after, runs)


def capture(server: LLM, path: Path) -> None:
    """What AgentDesk's run sent the model: the peer sends the same."""
    sent = json.loads(urlopen(server.url + "/_requests", timeout=10).read())["requests"][-1]
    system = [m["content"] for m in sent["messages"] if m["role"] == "system"]
    path.write_text(
        json.dumps({"system": system[0], "tools": sent["tools"], "max_tokens": sent["max_tokens"]})
    )


def peer(runs: int, processes: int, groups: list[Group], label: str) -> Measure:
    import redis
    from celery import current_app
    from django.conf import settings

    client = redis.Redis.from_url(settings.REDIS_URL)
    counter = f"agentdesk:bench:langgraph:{os.getpid()}:{label}"

    def send(prefix: str, count: int) -> None:
        client.delete(f"{counter}:{prefix}:done", f"{counter}:{prefix}:failed")
        in_threads(
            lambda n: current_app.send_task(
                "bench.langgraph_run",
                args=[
                    f"{os.getpid()}-{prefix}-{label}-{n}",
                    f"Request {label} {n}",
                    f"{counter}:{prefix}",
                ],
            ),
            count,
        )
        finished = lambda: sum(  # noqa: E731
            int(client.get(f"{counter}:{prefix}:{end}") or 0) for end in ("done", "failed")
        )
        wait_for(lambda: finished() >= count, 600, "the LangGraph runs did not finish")
        failed = int(client.get(f"{counter}:{prefix}:failed") or 0)
        client.delete(f"{counter}:{prefix}:done", f"{counter}:{prefix}:failed")
        if failed:
            raise SystemExit(f"throughput: {failed} of {count} LangGraph runs failed")

    send("warm", 4 * processes)  # unmeasured: each process builds its graph, pool, client
    before, started = snapshot(groups), time.perf_counter()
    send("measured", runs)
    elapsed, after = time.perf_counter() - started, snapshot(groups)
    return Measure(runs / elapsed, before, after, runs)


if __name__ == "__main__":
    sys.exit(main())
