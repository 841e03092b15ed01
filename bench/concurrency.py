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

Then two more scenarios on the same stack (each selectable: --scenarios one_step team chats;
all three by default, in that order):

team: one task submitted with the team, whose head node splits it into 8 parallel subtasks
(TEAM_MAX_SUBTASKS, 8 by default), spread over the three seeded worker profiles, each child
answering in one model request of --latency seconds. Prints the peak of the children's requests
in flight (target: all 8 at once) and the time from the first child's request to the last
child's answer. A profile runs at most its concurrency_limit children at once across every
worker (seeded: 4, so 3 profiles x 4 = 12; before migration 0020 it was 2, and 6 could run):
--profile-limit N sets the three to N for its run and puts them back after (0, the default,
leaves them as they are).

chats: --agents (5) contract agents started (each turn's answer takes 3 x --latency, its
evaluation --latency; never met, so they keep working), then, once every agent has a request
with the model, --chats (20) conversations each posting one message at once. A chat's answer
streams in pieces --latency / 4 apart. Its first token's time is measured from just before
message_post to the first `run.token` message of its run on the channel layer (what a chat
page's socket or an SSE stream forwards; the bench subscribes to the run's group in the
transaction that posts the message, before the answer is sent to a worker); also printed: from
the message to its request reaching the model (the scripted server's timeline). Target: every
first token within 2 s of its message.

    uv run python bench/concurrency.py --small      # a few seconds each: 10 runs, 5 chats...

SQLite and an embedded Valkey in a temporary VAR_DIR unless DATABASE_URL / REDIS_URL are set;
WORKER_POOL / WORKER_CONCURRENCY as `go` reads them (unset: its defaults). The one-step runs are
submitted by --people (10) people, round robin: one person's runs past RUNS_RUNNING_PER_USER
(50) wait their turn in the database (runs/admission.py), which would cap what is in flight.
The database and Redis must be the bench's alone: another stack's workers on the same Redis
take its runs from the queue, and the seeded LLM connection row follows the LLM_BASE_URL of
whichever process synced it last (connections/services.py), so runs reach the other's model.
"""

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote
from urllib.request import Request, urlopen

from harness import in_threads, start_django  # noqa: E402  (bench/ is on sys.path as a script)
from run_start import free_port, spawn, wait_for

PAGE = os.sysconf("SC_PAGE_SIZE")
RSS_LIMIT_MB = 1024
CONNECTIONS_LIMIT = 20
SCENARIOS = ("one_step", "team", "chats")
TEAM_SIZE = 8
WORKER_PROFILES = ("research_agent", "builder_agent", "synthesis_agent")
FIRST_TOKEN_LIMIT = 2.0  # seconds from a chat message to its answer's first token
CHAT_ANSWER = "Here is a streamed answer, sent in several pieces, to the question you asked."


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

    def script(self, rules: list[dict]) -> None:
        """These rules from now on; what was counted so far is forgotten."""
        self._post("/_reset", {})
        self._post("/_script", {"rules": rules})

    def peak_in_flight(self) -> int:
        return json.loads(urlopen(self.url + "/_in_flight", timeout=10).read())["peak"]

    def timeline(self, match: str) -> list[tuple[float, float | None]]:
        """(came, answered) of each request holding `match`, on time.monotonic()'s clock
        (CLOCK_MONOTONIC: one clock for every process of the machine)."""
        answer = urlopen(f"{self.url}/_timeline?match={quote(match)}", timeout=10).read()
        return [tuple(window) for window in json.loads(answer)["timeline"]]


def peak_of(windows: list[tuple[float, float | None]]) -> int:
    """The most of these requests in flight at once."""
    marks = sorted(
        mark
        for came, answered in windows
        for mark in ((came, 1), (answered if answered is not None else float("inf"), -1))
    )
    peak = current = 0
    for _, change in marks:
        current += change
        peak = max(peak, current)
    return peak


class TokenListener(threading.Thread):
    """Hears the channel layer as a chat page's socket does: the first `run.token` message of
    each run it watches, when it came (time.monotonic())."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        from channels.layers import get_channel_layer

        self.layer = get_channel_layer()
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.first: dict[int, float] = {}
        self.channel = ""
        self.task: asyncio.Task | None = None

    def run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.task = self.loop.create_task(self._listen())
        with contextlib.suppress(asyncio.CancelledError):
            self.loop.run_until_complete(self.task)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.task.cancel)
        self.join(10)

    async def _listen(self) -> None:
        self.channel = await self.layer.new_channel("bench.")
        self.ready.set()
        while True:
            message = await self.layer.receive(self.channel)
            if message.get("type") == "run.token" and message.get("token"):
                self.first.setdefault(int(message["run_id"]), time.monotonic())

    def watch(self, run_id: int) -> None:
        self.ready.wait(10)
        future = asyncio.run_coroutine_threadsafe(
            self.layer.group_add(f"run.{run_id}", self.channel), self.loop
        )
        future.result(10)


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


def submit(owners, runs: int, label: str) -> list[int]:
    """Submit `runs` runs at once, as many people or clients would: from 16 threads (each
    keeping its database connection, as a web process with persistent connections does), the
    people of `owners` in turn."""
    from agents_app.runs.services import task_submit

    return in_threads(
        lambda n: (
            task_submit(
                owner=owners[n % len(owners)], interface="api", text=f"{label} {n}", fast_path=True
            ).pk
        ),
        runs,
    )


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


def one_step(args, server: LLM, owners, go: int) -> None:
    """N one-step runs at once against one alone and against instant answers."""
    from django.db import connection

    sampler = Sampler(go, os.environ["DATABASE_URL"])
    server.answer_after(0)
    started = time.perf_counter()
    instant = submit(owners, args.runs, "instant")
    finish(instant, 600)
    rate = args.runs / (time.perf_counter() - started)
    baseline_rss = rss_mb(workers_of(go))

    server.answer_after(args.latency)
    started = time.perf_counter()
    alone = submit(owners[:1], 1, "alone")
    finish(alone, 120)
    one = time.perf_counter() - started

    server.answer_after(args.latency)
    sampler.start()
    started = time.perf_counter()
    ids = submit(owners, args.runs, "together")
    finish(ids, 600)
    together = time.perf_counter() - started
    sampler.stop.set()
    sampler.join()
    peak = server.peak_in_flight()

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
        f"concurrency: {args.runs} one-step runs of {len(owners)} people, answers of"
        f" {args.latency:g} s, {connection.vendor} + Redis, pool {pool},"
        f" concurrency {concurrency}, {len(workers_of(go))} worker processes"
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
    verdict(checks)


def verdict(checks: dict[str, bool], label: str = "target") -> None:
    failed = [name for name, ok in checks.items() if not ok]
    print(
        f"  {label:<17} {', '.join(checks)}: {'not met' if failed else 'met'}"
        + (f" ({', '.join(failed)} missed)" if failed else ""),
        flush=True,
    )


def team(args, server: LLM, owner) -> None:
    """One team task whose head node splits it into TEAM_SIZE parallel subtasks."""
    from django.conf import settings

    from agents_app.models import AgentProfile, Run, RunEvent
    from agents_app.orchestration.children import busy_by_profile
    from agents_app.runs.services import task_submit
    from tests.support.profiles import seed_profiles
    from tests.support.script import json_reply

    size = min(TEAM_SIZE, settings.TEAM_MAX_SUBTASKS)
    profiles = seed_profiles()
    names = [name for name in WORKER_PROFILES if name in profiles]
    subtasks = [
        {
            "description": f"Part {n + 1} of {size}: look into it (subtask BENCH-PART-{n + 1})",
            "depends_on": [],
            "preferred_profile": names[n % len(names)],
        }
        for n in range(size)
    ]
    split = {"pattern": "parallel", "subtasks": subtasks, "reasoning": "independent parts"}
    server.script(
        [
            {"match": "AGENTDESK:TEAM", "replies": [json_reply(split)], "repeat": True},
            {
                "match": "AGENTDESK:DIRECT",
                "replies": [{"content": "done", "delay": args.latency}],
                "repeat": True,
            },
        ]
    )
    seeded = {name: profiles[name].concurrency_limit for name in names}
    if args.profile_limit:
        AgentProfile.objects.filter(name__in=names).update(concurrency_limit=args.profile_limit)
    limits = {p.name: p.concurrency_limit for p in AgentProfile.objects.filter(name__in=names)}
    busy = busy_by_profile()
    try:
        started = time.perf_counter()
        run = task_submit(owner=owner, interface="api", text=f"Do {size} things", team=True)
        finished = Run.objects.filter(pk=run.pk, finished_at__isnull=False)
        wait_for(finished.exists, 120 + 4 * args.latency, f"team run {run.pk} did not finish")
        whole = time.perf_counter() - started
    finally:
        for name, limit in seeded.items():
            AgentProfile.objects.filter(name=name).update(concurrency_limit=limit)
    run.refresh_from_db()
    if run.status != "succeeded":
        raise SystemExit(f"concurrency: team run {run.pk} ended {run.status}: {run.error_message}")
    windows = server.timeline("AGENTDESK:DIRECT")
    answered = [a for _, a in windows if a is not None]
    if len(windows) != size or len(answered) != size:
        raise SystemExit(f"concurrency: {len(windows)} child requests, not {size}")
    peak = peak_of(windows)
    span = max(answered) - min(c for c, _ in windows)
    queued = RunEvent.objects.filter(run=run, type="subtask_queued").count()
    shown = ", ".join(f"{name} {limits[name]}" for name in names)
    raised = (
        f" (raised from {'/'.join(str(v) for v in sorted(set(seeded.values())))}: seeded,"
        f" {len(names)} x {max(seeded.values())} = {len(names) * max(seeded.values())} at once)"
        if args.profile_limit and limits != seeded
        else ""
    )
    print(f"concurrency: a team of {size} children, answers of {args.latency:g} s")
    print(f"  profiles          concurrency_limit {shown}{raised}")
    if any(busy.get(name) for name in names):
        print(f"  busy before       {busy} (runs of those profiles already working)")
    print(
        f"  team children     peak {peak} of {size} in flight, first request to last answer"
        f" {span:.2f} s ({span / args.latency:.1f}x one answer); the whole task {whole:.2f} s"
        + (f"; {queued} subtasks queued for a profile" if queued else "")
    )
    verdict({f"all {size} at once": peak >= size})


def chats(args, server: LLM, owner) -> None:
    """Chats posted beside contract agents that keep working."""
    from django.db import connection, transaction

    from agents_app.contracts.services import agent_create, agent_start, agent_stop
    from agents_app.conversations.services import conversation_create, message_post
    from agents_app.models import Run
    from tests.support.script import json_reply

    not_met = json_reply({"met": False, "reason": "more work remains", "evidence": []})
    server.script(
        [
            {
                "match": "AGENTDESK:EVALUATE",
                "replies": [{**not_met, "delay": args.latency}],
                "repeat": True,
            },
            {
                "match": "AGENTDESK:CONTRACT",
                "replies": [{"content": "Working on it.", "delay": 3 * args.latency}],
                "repeat": True,
            },
            {
                "match": "AGENTDESK:CHAT",
                "replies": [{"content": CHAT_ANSWER, "chunk_delay": args.latency / 4}],
                "repeat": True,
            },
        ]
    )
    listener = TokenListener()
    listener.start()
    conversations = [
        conversation_create(owner=owner, interface="api", title=f"bench chat {n}")
        for n in range(args.chats)
    ]
    agents = [
        agent_create(owner=owner, interface="api", contract=f"Keep working, bench agent {n}.")
        for n in range(args.agents)
    ]
    attempts = [agent_start(agent=a, actor=owner, interface="api").pk for a in agents]
    wait_for(
        lambda: len(server.timeline("AGENTDESK:CONTRACT")) >= args.agents,
        60,
        "the contract agents did not reach the model",
    )
    posted: dict[int, tuple[float, int]] = {}  # chat number: (posted at, its answer's run)
    stored: dict[int, float] = {}  # chat number: seconds until message_post committed
    barrier = threading.Barrier(args.chats)

    def post(n: int) -> None:
        try:
            barrier.wait(30)
            sent = time.monotonic()
            # The answer goes to a worker when this commits: its group is joined first.
            with transaction.atomic():
                _, run = message_post(
                    conversation=conversations[n],
                    actor=owner,
                    interface="api",
                    text=f"chat message {n}: what is {n} + 1?",
                )
                assert run is not None
                listener.watch(run.pk)
            stored[n] = time.monotonic() - sent
            posted[n] = (sent, run.pk)
        finally:
            connection.close()

    try:
        with ThreadPoolExecutor(args.chats) as pool:
            list(pool.map(post, range(args.chats)))
        answers = [run for _, run in posted.values()]
        finish(answers, 120 + 4 * args.latency)
        running = Run.objects.filter(pk__in=attempts, finished_at__isnull=True).count()
        contract_requests = server.timeline("AGENTDESK:CONTRACT")
    finally:
        for agent in agents:
            with contextlib.suppress(Exception):
                agent_stop(agent=agent, actor=owner, interface="api")
    listener.stop()
    wait_for(
        lambda: not Run.objects.filter(pk__in=attempts, finished_at__isnull=True).exists(),
        30 + 4 * args.latency,
        "the contract agents did not stop",
    )
    first_token, at_model = [], []
    for n, (sent, run_id) in sorted(posted.items()):
        if run_id not in listener.first:
            raise SystemExit(f"concurrency: no token of chat {n}'s answer (run {run_id}) came")
        first_token.append(listener.first[run_id] - sent)
        came = server.timeline(f"chat message {n}:")
        at_model.append(min(c for c, _ in came) - sent)
    window = (min(s for s, _ in posted.values()), max(listener.first.values()))
    beside = sum(
        1
        for came, answered in contract_requests
        if came < window[1] and (answered or 1e18) > window[0]
    )
    print(
        f"concurrency: {args.chats} chats, one message each at once, beside {args.agents}"
        f" contract agents ({running} of them still working when the last answer ended;"
        f" {beside} of their requests overlapped the chats)"
    )
    print(
        f"  first token       p50 {statistics.median(first_token):.2f} s, max"
        f" {max(first_token):.2f} s after its message (the first run.token on the channel layer)"
    )
    print(
        f"  message stored    p50 {statistics.median(stored.values()):.2f} s, max"
        f" {max(stored.values()):.2f} s after its message (message_post's transaction committed)"
    )
    print(
        f"  at the model      p50 {statistics.median(at_model):.2f} s, max {max(at_model):.2f} s"
        " after its message (its request reached the scripted server)"
    )
    verdict(
        {f"every first token <= {FIRST_TOKEN_LIMIT:g} s": max(first_token) <= FIRST_TOKEN_LIMIT}
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per model answer")
    parser.add_argument("--people", type=int, default=10, help="who submit the one-step runs")
    parser.add_argument("--chats", type=int, default=20)
    parser.add_argument("--agents", type=int, default=5, help="contract agents beside the chats")
    parser.add_argument(
        "--profile-limit",
        type=int,
        default=0,
        help="the worker profiles' concurrency_limit for the team (0: as it is)",
    )
    parser.add_argument(
        "--scenarios", nargs="+", choices=SCENARIOS, default=list(SCENARIOS), metavar="NAME"
    )
    parser.add_argument(
        "--small",
        action="store_true",
        help="a few seconds each: 10 runs, answers of 0.5 s, 5 chats beside 2 agents",
    )
    args = parser.parse_args()
    if args.small:
        args.runs, args.latency, args.chats, args.agents = 10, 0.5, 5, 2

    llm_port, web_port = free_port(), free_port()
    os.environ.update({"LLM_BASE_URL": f"http://127.0.0.1:{llm_port}/v1", "LLM_MODEL": "scripted"})
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    # A team's children answer in one request (the fast path), as the one-step runs do.
    os.environ.setdefault("AGENT_FAST_PATH_MAX_CHARS", "500")
    scratch, valkey = start_django("concurrency")
    from django.contrib.auth import get_user_model

    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PORT": str(web_port)}
    llm = spawn(
        ["-m", "tests.support.llm_server", "--port", str(llm_port)], scratch / "llm.log", env
    )
    go_log = scratch / "go.log"
    go = spawn(["-c", "from config.launcher import main; main()"], go_log, env)
    try:
        server = LLM(llm_port)
        wait_for(lambda: "AgentDesk is running" in go_log.read_text(), 120, "go did not start")
        users = get_user_model().objects
        owners = [
            users.get_or_create(username="bench" if n == 0 else f"bench{n}")[0]
            for n in range(max(1, args.people))
        ]
        server.answer_after(0)
        # Warm: the worker imports and connects on its first runs.
        finish(submit(owners, 4, "warm"), 120)
        if "one_step" in args.scenarios:
            one_step(args, server, owners, go.pid)
        if "team" in args.scenarios:
            team(args, server, owners[0])
        if "chats" in args.scenarios:
            chats(args, server, owners[0])
    finally:
        for process in (go, llm):
            os.killpg(process.pid, signal.SIGTERM)
        for process in (go, llm):
            process.wait(timeout=60)
        if valkey is not None:
            valkey.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
