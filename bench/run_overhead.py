"""What the platform costs per step: a run of N steps (50 by default) with an instant in-process
LLM and a no-op tool (tests/support/instant.py), executed by the real engine against a real database and
Redis, several times. Prints the median and the fastest ms per step, and the queries per step.

    uv run python bench/run_overhead.py [--steps 50] [--repeat 5]

Uses SQLite + an embedded Valkey in a temporary directory unless DATABASE_URL / REDIS_URL are set.
"""

import argparse
import os
import statistics

from harness import start_django  # noqa: E402  (bench/ is on sys.path when run as a script)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    os.environ.setdefault("AGENT_MAX_STEPS", str(args.steps))
    os.environ.setdefault("RUN_MAX_TOOL_CALLS", str(args.steps * 2))
    _, valkey = start_django("overhead")
    from django.db import connection

    from agents_app.models import Step
    from tests.support.instant import agentdesk_run

    per_step = []
    for _ in range(args.repeat):
        elapsed, queries, run = agentdesk_run(args.steps)
        completed = Step.objects.filter(run=run, status="completed").count()
        assert run.status == "succeeded" and completed == args.steps, (
            run.status,
            run.error_message,
        )
        per_step.append(elapsed * 1000 / args.steps)
    vendor = connection.vendor
    print(f"run_overhead: {args.steps} steps on {vendor}, {args.repeat} runs, all succeeded")
    print(
        f"  per step     median {statistics.median(per_step):6.2f} ms, fastest "
        f"{min(per_step):6.2f} ms   {queries / args.steps:.1f} queries"
    )
    print(f"  events       {run.event_seq} a run")
    if valkey is not None:
        valkey.stop()


if __name__ == "__main__":
    main()
