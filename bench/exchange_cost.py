"""What keeping every model call's answer costs a step (issue 36, item 1: at most 10% more):
runs of N steps (50 by default) with an instant in-process LLM and a no-op tool
(tests/support/instant.py), as bench/run_overhead.py times them, with the model exchanges
recorded and with the recording switched off (the worker's hooks keep nothing), alternated in
one process: a round each, in turn recorded first and not, so a slower minute of the machine
falls on both. Prints each side's median ms per step, the ratio of the medians and the median
of the rounds' ratios, against the 1.10 target, and the ratio of this process's CPU time (which
other processes on the machine sway less: read it at a small size, among other benchmarks).

    uv run python bench/exchange_cost.py [--steps 50] [--rounds 20]

Switched off, the request's text and hash are still made (engine.calls makes them before it
hands the exchange to the hooks): the figure is what keeping them adds (the answers and the
requests redacted, a step's calls framed into one row and written, numbered). Uses SQLite + an embedded Valkey in a temporary
directory unless DATABASE_URL / REDIS_URL are set.
"""

import argparse
import statistics
import time

from harness import start_django  # noqa: E402  (bench/ is on sys.path when run as a script)

TARGET = 1.10


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()

    start_django("exchanges")
    from django.db import connection

    from agents_app.runs.exchanges import model_calls
    from agents_app.worker.hooks import DatabaseHooks
    from tests.support.instant import agentdesk_run

    recording = DatabaseHooks.on_llm_exchange

    def kept_nothing(self, exchange) -> None:
        """Hooks that keep no exchange."""

    sides = {"recorded": recording, "not recorded": kept_nothing}
    agentdesk_run(args.steps, count=False)  # a worker process has run before
    per_step: dict[str, list[float]] = {name: [] for name in sides}
    cpu_per_step: dict[str, list[float]] = {name: [] for name in sides}
    for round_ in range(args.rounds):
        order = list(sides) if round_ % 2 == 0 else list(reversed(sides))
        for name in order:
            DatabaseHooks.on_llm_exchange = sides[name]
            cpu = time.process_time()
            elapsed, _, run = agentdesk_run(args.steps, count=False)
            cpu_per_step[name].append((time.process_time() - cpu) * 1000 / args.steps)
            assert run.status == "succeeded", (run.status, run.error_message)
            kept = len(model_calls(run.pk))
            assert (kept > 0) == (name == "recorded"), (name, kept)
            per_step[name].append(elapsed * 1000 / args.steps)
    DatabaseHooks.on_llm_exchange = recording

    medians = {name: statistics.median(times) for name, times in per_step.items()}
    ratio = medians["recorded"] / medians["not recorded"]
    pairs = statistics.median(
        a / b for a, b in zip(per_step["recorded"], per_step["not recorded"], strict=True)
    )
    print(
        f"exchange_cost: {args.steps} steps on {connection.vendor}, {args.rounds} rounds "
        "alternated, all succeeded"
    )
    for name, median in medians.items():
        print(f"  {name:<13} median {median:6.3f} ms a step")
    # What this process spent (the worker, and SQLite in it; not a PostgreSQL server's time):
    # steadier than the clock when other processes share the machine (bench/all.py at once).
    cpu = statistics.median(cpu_per_step["recorded"]) / statistics.median(
        cpu_per_step["not recorded"]
    )
    verdict = "met" if ratio <= TARGET else "missed"
    print(
        f"  recorded / not: {ratio:.3f} (median of the rounds' ratios {pairs:.3f}; "
        f"this process's CPU time {cpu:.3f}); target {TARGET:.2f}: {verdict}"
    )


if __name__ == "__main__":
    main()
