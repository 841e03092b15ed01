"""The plan-execute loop whose cost per step the hot-path test counts and the overhead
benchmarks time (bench/run_overhead.py, bench/compare_langgraph.py), without a model's time: an
LLM that answers at once and a tool that does nothing. Each of the N planned steps calls the tool
once and then answers; the verifier approves. Import after Django is set up."""

import json
from typing import Any


def noop_result() -> dict[str, Any]:
    return {}


def plan_steps(steps: int) -> list[dict[str, Any]]:
    return [{"objective": f"step {i}", "tool_names": ["noop"]} for i in range(steps)]


def instant_llm(steps: int) -> Any:
    """An LLMProvider for the engine: plans `steps` steps; a step calls noop, then answers."""
    from agents_app.engine.llm import LLMResponse, ToolCallRequest, Usage

    class InstantLLM:
        def complete(self, request):
            system = request.messages[0]["content"]
            usage = Usage(1, 1)
            if "AGENTDESK:PLAN" in system:
                return LLMResponse(content="", parsed={"steps": plan_steps(steps)}, usage=usage)
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

    return InstantLLM()


def noop_registry() -> Any:
    """A tool registry holding only `noop`."""
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
            return ToolResult(ok=True, content=noop_result())

    registry = ToolRegistry()
    registry.register(NoopTool())
    return registry


def agentdesk_run(steps: int, *, count: bool = True) -> tuple[float, int, Any]:
    """One run of `steps` steps executed by the real engine on this process's database, as a
    worker process executes it (its connection kept from run to run, worker.connections):
    (seconds, queries, the run). Without `count`, the queries are not counted (0): a
    comparison times the engine, not the counting."""
    import time
    from contextlib import nullcontext

    from django.contrib.auth import get_user_model
    from django.db import connection

    from agents_app.models import Run, Task
    from agents_app.worker.connections import keep_connections
    from agents_app.worker.execution import execute_run

    keep_connections()

    user, _ = get_user_model().objects.get_or_create(username="bench")
    task = Task.objects.create(owner=user, text="benchmark")
    run = Run.objects.create(task=task, owner=user, max_tokens=10**9, max_tool_calls=10**6)
    provider, registry = instant_llm(steps), noop_registry()
    queries = 0

    def counter(execute, sql, params, many, context):
        nonlocal queries
        queries += 1
        return execute(sql, params, many, context)

    with connection.execute_wrapper(counter) if count else nullcontext():
        started = time.perf_counter()
        execute_run(run.pk, provider=provider, registry=registry)
        elapsed = time.perf_counter() - started
    run.refresh_from_db()
    return elapsed, queries, run
