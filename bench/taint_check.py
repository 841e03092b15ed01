"""What the taint check costs a sink call (issue 35): before a call that reaches the network or
runs code, its arguments are compared with every tool result of the run's tree
(approvals.provenance.call_taints). Only sink calls pay it; a step whose calls are not sinks
pays nothing (bench/run_overhead.py measures such steps).

A run holds RESULTS tool calls whose results are pages of SIZE characters (as a step would
after many fetches); the check runs on a clean URL argument (the common case: nothing found,
every source searched) and on a long text argument (a file's content: every 8th window
looked up). Prints the median ms per check, to set against a step's cost (run_overhead).

    uv run python bench/taint_check.py [--results 50] [--size 2000] [--repeat 200]
"""

import argparse
import statistics
import time

from harness import start_django  # noqa: E402  (bench/ is on sys.path when run as a script)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--results", type=int, default=50)
    parser.add_argument("--size", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    _, valkey = start_django("taint")
    from django.contrib.auth import get_user_model

    from agents_app.approvals.provenance import call_taints
    from agents_app.models import Plan, Run, Step, Task, ToolCall

    user, _ = get_user_model().objects.get_or_create(username="bench")
    task = Task.objects.create(owner=user, text="Read https://docs.example.com/a and sum it up")
    run = Run.objects.create(task=task, owner=user, max_tokens=10**9, max_tool_calls=10**6)
    plan = Plan.objects.create(run=run, version=1, raw={})
    step = Step.objects.create(plan=plan, run=run, index=0, objective="read")
    words = "the quick brown fox jumps over the lazy dog near docs.example.com "
    page = (words * (args.size // len(words) + 1))[: args.size]
    ToolCall.objects.bulk_create(
        ToolCall(
            run=run,
            step=step,
            tool="http_get",
            arguments={"url": f"https://docs.example.com/{i}"},
            status="succeeded",
            result={"status": 200, "body": f"{i} {page}"},
        )
        for i in range(args.results)
    )
    cases = {
        "a URL": {"url": "https://docs.example.com/b?q=summary"},
        "4 KB of text": {"content": " ".join(f"summary{i}" for i in range(400))[:4000]},
    }
    print(
        f"taint_check: {args.results} results of {args.size} characters, {args.repeat} checks each"
    )
    for name, arguments in cases.items():
        call_taints(run, arguments)  # warm
        times = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            found = call_taints(run, arguments)
            times.append((time.perf_counter() - started) * 1000)
        assert not found, found
        print(
            f"  {name:<14} median {statistics.median(times):6.2f} ms, fastest "
            f"{min(times):6.2f} ms a sink call"
        )
    if valkey is not None:
        valkey.stop()


if __name__ == "__main__":
    main()
