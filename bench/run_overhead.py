"""What the platform costs per step: a 50-step run with an instant in-process LLM and a no-op
tool, executed by the real engine against a real database and Redis. Prints ms and queries per step.

    uv run python bench/run_overhead.py [--steps 50]

Uses SQLite + an embedded Valkey in a temporary directory unless DATABASE_URL / REDIS_URL are set.
"""

import argparse
import json
import os
import time

from harness import start_django  # noqa: E402  (bench/ is on sys.path when run as a script)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()

    os.environ.setdefault("AGENT_MAX_STEPS", str(args.steps))
    os.environ.setdefault("RUN_MAX_TOOL_CALLS", str(args.steps * 2))
    _, valkey = start_django("overhead")
    from django.contrib.auth import get_user_model
    from django.db import connection

    from agents_app.engine.llm import LLMResponse, ToolCallRequest, Usage
    from agents_app.models import Run, Step, Task
    from agents_app.worker.execution import execute_run
    from tools_app.registry import Tool, ToolRegistry, ToolResult, ToolSpec

    class NoopTool(Tool):
        spec = ToolSpec(
            name="noop",
            description="Does nothing.",
            input_schema={"type": "object", "properties": {}},
            capabilities=frozenset({"NOOP"}),
            domain="bench",
        )

        def run(self, arguments, context):
            return ToolResult(ok=True, content={})

    class InstantLLM:
        """Plans N steps; each step calls noop once then answers; the verifier approves."""

        def complete(self, request):
            system = request.messages[0]["content"]
            usage = Usage(1, 1)
            if "AGENTDESK:PLAN" in system:
                steps = [
                    {"objective": f"step {i}", "tool_names": ["noop"]} for i in range(args.steps)
                ]
                return LLMResponse(content="", parsed={"steps": steps}, usage=usage)
            if "AGENTDESK:VERIFY" in system:
                verdict = {
                    "task_complete": True,
                    "reasoning": "ok",
                    "response": "done",
                    "evidence": [1],
                }
                return LLMResponse(content=json.dumps(verdict), parsed=verdict, usage=usage)
            if request.messages[-1]["role"] == "tool":
                return LLMResponse(content="step done", usage=usage)
            return LLMResponse(
                content="", tool_calls=[ToolCallRequest("c1", "noop", {})], usage=usage
            )

    user, _ = get_user_model().objects.get_or_create(username="bench")
    task = Task.objects.create(owner=user, text="benchmark")
    run = Run.objects.create(task=task, owner=user, max_tokens=10**9, max_tool_calls=10**6)
    registry = ToolRegistry()
    registry.register(NoopTool())

    queries = 0

    def count(execute, sql, params, many, context):
        nonlocal queries
        queries += 1
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        started = time.perf_counter()
        execute_run(run.pk, provider=InstantLLM(), registry=registry)
        elapsed = time.perf_counter() - started

    run.refresh_from_db()
    completed = Step.objects.filter(run=run, status="completed").count()
    assert run.status == "succeeded" and completed == args.steps, (run.status, run.error_message)
    vendor = connection.vendor
    print(f"run_overhead: {args.steps} steps on {vendor}, status {run.status}")
    print(f"  total        {elapsed * 1000:8.1f} ms   {queries} queries")
    print(
        f"  per step     {elapsed * 1000 / args.steps:8.2f} ms   {queries / args.steps:.1f} queries"
    )
    print(f"  events       {run.event_seq}")
    if valkey is not None:
        valkey.stop()


if __name__ == "__main__":
    main()
