"""Every benchmark CI runs, each in its own process and environment: their output as it comes
(each line after the benchmark's name), then one table of each one's headline figures, seconds
and processor seconds taken, and exit status. Exits non-zero when any of them failed.

    uv run python bench/all.py [--small] [--only NAME ...] [--jobs N]

At full size (the default) they run one at a time, as the README's figures were measured:
throughput, compare_langgraph's and run_overhead's second passes on PostgreSQL + Redis
(CI_DATABASE_URL / CI_REDIS_URL, else postgres://postgres@127.0.0.1:5432/test and
redis://127.0.0.1:6379/0), the others on their embedded defaults (SQLite + an embedded Valkey;
real_model on SmolLM2: LOCAL_MODEL is unset for all). --small runs each at a size of a few
seconds, as CI runs them, three at a time (never two PostgreSQL ones): a benchmark spends about
half its time waiting (for workers to start and stop, for a scripted model's delay), so three
keep two processors busy and the whole list takes under a minute. The same figures, noisier,
and the more so for sharing the processors. --only NAME (a script's name, or a row's) runs
those alone; --jobs N, N at a time.

Where PYTHONDONTWRITEBYTECODE is set, their Python processes keep their bytecode all the same,
in a cache under the temporary directory (PYTHONPYCACHEPREFIX): the benchmarks start some twenty
of them (workers, daphne, servers), and each would otherwise compile Django and AgentDesk from
source again, seconds of processor time apiece.
"""

import argparse
import os
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass

from harness import CACHE, ROOT

PG_URL = os.environ.get("CI_DATABASE_URL") or "postgres://postgres@127.0.0.1:5432/test"
REDIS_URL = os.environ.get("CI_REDIS_URL") or "redis://127.0.0.1:6379/0"
POSTGRES = threading.Lock()  # the benchmarks on PostgreSQL share its database: one at a time
PRINTING = threading.Lock()


@dataclass(frozen=True)
class Benchmark:
    name: str
    script: str
    full: tuple[str, ...]  # arguments at full size
    small: tuple[str, ...]  # and at --small
    # Lines of its output that carry its headline figures: a pattern (multiline) and what of
    # each match to show (a re.Match.expand template; None: the match itself).
    headlines: tuple[tuple[str, str | None], ...]
    postgres: bool = False  # on PostgreSQL + Redis rather than the embedded defaults
    group: str = ""  # a uv dependency group it needs

    def command(self, small: bool) -> list[str]:
        args = [f"bench/{self.script}.py", *(self.small if small else self.full)]
        if self.group:
            return ["uv", "run", "--group", self.group, "python", *args]
        return [sys.executable, *args]

    def environment(self) -> dict[str, str]:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        for name in ("DATABASE_URL", "REDIS_URL", "LOCAL_MODEL"):
            env.pop(name, None)
        if env.pop("PYTHONDONTWRITEBYTECODE", None):  # bytecode, but outside the checkout
            env["PYTHONPYCACHEPREFIX"] = str(CACHE / "pycache")
        if self.postgres:
            env.update(DATABASE_URL=PG_URL, REDIS_URL=REDIS_URL)
        return env


OVERHEAD = (
    (
        r"(\d+) steps on \w+.*\n\s*per step\s+median\s+([\d.]+ ms), fastest\s+([\d.]+ ms)\s+"
        r"([\d.]+) queries",
        r"\1 steps: a step \2 (fastest \3), \4 queries",
    ),
    (r"^\s*a step of .*", None),
)
TAINT = ((r"^\s*(a URL|4 KB of text)\s+median\s+([\d.]+ ms)", r"\1: \2 a sink call"),)
LANGGRAPH = (
    (r"^\s*(AgentDesk|LangGraph)\s+median\s+([\d.]+ ms)", r"\1 \2 a step"),
    (r"^\s*ratio\s+([\d.]+x) LangGraph.*(target .*)", r"\1 LangGraph, \2"),
)
# The longest first: run a few at a time, they end about together.
BENCHMARKS = [
    Benchmark(
        "throughput",
        "throughput",
        (),
        ("--runs", "10", "--processes", "1"),
        (
            (r"^\s*model\s+\d+ ms\s+\d+ worker process(es)?\s+AgentDesk .*", None),
            (r"^\s*target \d+ ms: .*", None),
        ),
        postgres=True,
        group="bench",
    ),
    Benchmark(
        "team_parallel",
        "team_parallel",
        (),
        ("--tasks", "1", "--child-seconds", "1"),
        (
            (r"^\s*\d+ worker process(es)?\s+first request .*", None),
            (r"^\s*two workers / one .*", None),
            (r"^\s*target .*", None),
        ),
    ),
    Benchmark(
        "concurrency",
        "concurrency",
        (),
        ("--small",),
        (
            (r"^\s*\d+ at once .*", None),
            (r"^\s*peak in flight .*", None),
            (r"^\s*team children .*", None),
            (r"^\s*first token .*", None),
            (r"^\s*target .*", None),
        ),
    ),
    Benchmark(
        "run_start",
        "run_start",
        (),
        ("--runs", "5"),
        ((r"^\s*wait for a worker .*", None), (r"^\s*target .*", None)),
    ),
    Benchmark(
        "real_model",
        "real_model",
        (),
        ("--pick", "7"),  # one task, its quickest: one model turn
        (
            (r"^\s*truly done .*", None),
            (r"^\s*median time .*", None),
            (r"^\s*targets .*", None),
        ),
    ),
    Benchmark(
        "event_latency",
        "event_latency",
        (),
        ("--events", "50", "--warmup", "25"),
        ((r"^\s*commit → WebSocket client .*", None), (r"^\s*raw Redis .*", None)),
    ),
    Benchmark(
        "sse_streams",
        "sse_streams",
        (),
        ("--streams", "50"),
        ((r"^\s*got the result .*", None), (r"^\s*daphne RSS .*", None)),
    ),
    Benchmark(
        "tool_calls",
        "tool_calls",
        (),
        ("--calls", "20"),
        ((r"^\s*platform overhead.*", None),),
    ),
    Benchmark(
        "compare_langgraph",
        "compare_langgraph",
        (),
        ("--steps", "10", "--rounds", "3"),
        LANGGRAPH,
        group="bench",
    ),
    Benchmark(
        "compare_langgraph_postgresql",
        "compare_langgraph",
        ("--postgres",),
        ("--postgres", "--steps", "10", "--rounds", "3"),
        LANGGRAPH,
        postgres=True,
        group="bench",
    ),
    Benchmark(
        "taint_check",
        "taint_check",
        (),
        ("--results", "10", "--repeat", "20"),
        TAINT,
    ),
    Benchmark(
        "exchange_cost",
        "exchange_cost",
        ("--steps", "50", "--rounds", "20"),
        ("--steps", "20", "--rounds", "10"),
        (
            (r"^\s*(recorded|not recorded)\s+median.*", None),
            (r"^\s*recorded / not: .*", None),
        ),
    ),
    Benchmark(
        "run_overhead",
        "run_overhead",
        ("--steps", "50", "--steps", "500"),
        ("--steps", "5", "--steps", "25", "--repeat", "2"),
        OVERHEAD,
    ),
    Benchmark(
        "run_overhead_postgresql",
        "run_overhead",
        ("--steps", "50", "--steps", "500"),
        ("--steps", "5", "--steps", "25", "--repeat", "2"),
        OVERHEAD,
        postgres=True,
    ),
]


@dataclass(frozen=True)
class Result:
    benchmark: Benchmark
    seconds: float
    cpu: float  # processor seconds, its own and those of the processes it waited for
    status: int
    output: str

    def headlines(self) -> list[str]:
        found = []
        for pattern, template in self.benchmark.headlines:
            for match in re.finditer(pattern, self.output, re.MULTILINE):
                found.append(" ".join((match.expand(template) if template else match[0]).split()))
        return found or ["(no figures found)"]


def run(benchmark: Benchmark, small: bool) -> Result:
    """Run it, its output passed on line by line as it comes, each line after its name."""
    with POSTGRES if benchmark.postgres else nullcontext():
        command = benchmark.command(small)
        say(f"== {benchmark.name}: {' '.join(command)}")
        started = time.monotonic()
        lines = []
        with subprocess.Popen(
            command,
            cwd=ROOT,
            env=benchmark.environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
        ) as process:
            assert process.stdout is not None
            for line in process.stdout:
                say(f"{benchmark.name} | {line.rstrip()}")
                lines.append(line)
            # os.wait4 rather than process.wait: what it used, with the processes it waited for
            _, wait_status, usage = os.wait4(process.pid, 0)
            process.returncode = os.waitstatus_to_exitcode(wait_status)
    seconds, cpu = time.monotonic() - started, usage.ru_utime + usage.ru_stime
    say(f"== {benchmark.name}: {seconds:.1f} s, {cpu:.1f} s CPU, exit status {process.returncode}")
    return Result(benchmark, seconds, cpu, process.returncode, "".join(lines))


def say(line: str) -> None:
    with PRINTING:
        print(line, flush=True)


def table(results: list[Result], seconds: float) -> str:
    rows = [("benchmark", "headline figures", "seconds", "CPU s", "status")]
    for result in results:
        status = "ok" if result.status == 0 else f"FAILED ({result.status})"
        first, *more = result.headlines()
        rows.append(
            (result.benchmark.name, first, f"{result.seconds:.1f}", f"{result.cpu:.1f}", status)
        )
        rows += [("", headline, "", "", "") for headline in more]
    failed = sum(result.status != 0 for result in results)
    cpu = sum(result.cpu for result in results)
    rows.append(
        ("all", f"{len(results) - failed} of {len(results)} ok", f"{seconds:.1f}", f"{cpu:.1f}", "")
    )
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    return "\n".join(
        f"{name:<{widths[0]}}  {figures:<{widths[1]}}  {taken:>{widths[2]}}  {cpu:>{widths[3]}}  "
        f"{status}".rstrip()
        for name, figures, taken, cpu, status in rows
    )


def main() -> int:
    names = sorted({b.name for b in BENCHMARKS} | {b.script for b in BENCHMARKS})
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="each at a size of a few seconds")
    parser.add_argument("--only", nargs="+", choices=names, metavar="NAME", help=", ".join(names))
    parser.add_argument(
        "--jobs", type=int, help="how many at a time (1 at full size, 3 with --small)"
    )
    args = parser.parse_args()
    chosen = [b for b in BENCHMARKS if not args.only or {b.name, b.script} & set(args.only)]
    jobs = args.jobs or (3 if args.small else 1)

    started = time.monotonic()
    with ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda benchmark: run(benchmark, args.small), chosen))
    print(f"\n== benchmarks{' (small)' if args.small else ''}")
    print(table(results, time.monotonic() - started))
    return 0 if all(result.status == 0 for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
