"""What the platform costs per step: runs of N steps (50 by default) with an instant in-process
LLM and a no-op tool (tests/support/instant.py), executed by the real engine against a real
database and Redis, several times. Prints the median and the fastest ms per step, and the
queries per step.

    uv run python bench/run_overhead.py [--steps 50] [--steps 500] [--repeat 5]

Given several sizes, it runs them in the same process, alternating (a round each, in turn
forwards and backwards, so that a slower minute of the machine falls on both), and prints how
a step of the largest costs against one of the smallest: what a step costs must not grow with
the steps before it (the plan's and the verdict's fixed cost spread over fewer steps makes the
smaller runs' steps dearer, not cheaper). One run of the smallest size goes first, untimed, as
a worker process has run before.

Uses SQLite + an embedded Valkey in a temporary directory unless DATABASE_URL / REDIS_URL are set.
"""

import argparse
import os
import statistics

from harness import start_django  # noqa: E402  (bench/ is on sys.path when run as a script)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, action="append")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sizes = sorted(set(args.steps or [50]))

    os.environ.setdefault("AGENT_MAX_STEPS", str(max(sizes)))
    os.environ.setdefault("RUN_MAX_TOOL_CALLS", str(max(sizes) * 2))
    _, valkey = start_django("overhead")
    from django.db import connection

    from agents_app.models import Step
    from tests.support.instant import agentdesk_run

    agentdesk_run(sizes[0], count=False)
    per_step: dict[int, list[float]] = {size: [] for size in sizes}
    queries: dict[int, int] = {}
    events: dict[int, int] = {}
    for round_ in range(args.repeat):
        for steps in sizes if round_ % 2 == 0 else reversed(sizes):
            elapsed, queries[steps], run = agentdesk_run(steps)
            completed = Step.objects.filter(run=run, status="completed").count()
            assert run.status == "succeeded" and completed == steps, (
                run.status,
                run.error_message,
            )
            per_step[steps].append(elapsed * 1000 / steps)
            events[steps] = run.event_seq
    vendor = connection.vendor
    for steps in sizes:
        times = per_step[steps]
        print(f"run_overhead: {steps} steps on {vendor}, {args.repeat} runs, all succeeded")
        print(
            f"  per step     median {statistics.median(times):6.2f} ms, fastest "
            f"{min(times):6.2f} ms   {queries[steps] / steps:.1f} queries"
        )
        print(f"  events       {events[steps]} a run")
    if len(sizes) > 1:
        small, large = sizes[0], sizes[-1]
        ratio = statistics.median(per_step[large]) / statistics.median(per_step[small])
        fastest = min(per_step[large]) / min(per_step[small])
        print(
            f"  a step of {large} against one of {small}: {ratio:.2f}x median, "
            f"{fastest:.2f}x fastest (target: at most 1.20x)"
        )
    if valkey is not None:
        valkey.stop()


if __name__ == "__main__":
    main()
