"""AgentDesk's engine against LangGraph on the same plan-execute loop, per step, on SQLite.

Both run N steps (50 by default): plan, then for each step a model turn that calls a no-op
tool, the tool, and a model turn that answers; then verify. The model answers at once in both
(tests/support/instant.py's script), so what is measured is what each framework adds to a step:
AgentDesk its rows, events, audit and lease on SQLite (+ an embedded Valkey for the events);
LangGraph its checkpoint after every node (SqliteSaver, in a file). The two alternate in one
process, several rounds; the medians of ms per step are printed, and the ratio as the median of
each round's own (AgentDesk's run against the LangGraph run beside it): a slower minute of the
machine falls on both runs of a round, so the ratio holds while the machine's speed drifts.

    uv run --group bench python bench/compare_langgraph.py [--steps 50] [--rounds 11]
"""

import argparse
import sqlite3
import statistics
import time
from typing import Any, TypedDict

from harness import start_django  # noqa: E402  (bench/ is on sys.path when run as a script)

TARGET = 0.8  # issue 16: AgentDesk's ms per step at most 0.8x LangGraph's


class LoopState(TypedDict):
    steps: list[str]
    index: int
    messages: list[dict[str, Any]]
    outputs: list[str]
    verdict: str


def langgraph_loop(steps: int, path: str) -> Any:
    """The loop as a LangGraph graph with its SQLite checkpointer; returns a function that
    runs it once on a new thread and returns the seconds it took."""
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph

    from tests.support.instant import noop_result, plan_steps

    def model(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if messages and messages[-1]["role"] == "tool":
            return {"role": "assistant", "content": "step done"}
        call = {"id": "c1", "name": "noop", "arguments": {}}
        return {"role": "assistant", "content": "", "tool_calls": [call]}

    def plan(state: LoopState) -> dict[str, Any]:
        return {"steps": [s["objective"] for s in plan_steps(steps)], "index": 0}

    def agent(state: LoopState) -> dict[str, Any]:
        objective = state["steps"][state["index"]]
        messages = state["messages"] or [{"role": "user", "content": objective}]
        reply = model(messages)
        if reply.get("tool_calls"):
            return {"messages": [*messages, reply]}
        return {
            "messages": [],
            "outputs": [*state["outputs"], reply["content"]],
            "index": state["index"] + 1,
        }

    def tools(state: LoopState) -> dict[str, Any]:
        call = state["messages"][-1]["tool_calls"][0]
        result = {"role": "tool", "tool_call_id": call["id"], "content": str(noop_result())}
        return {"messages": [*state["messages"], result]}

    def verify(state: LoopState) -> dict[str, Any]:
        return {"verdict": "done" if len(state["outputs"]) == len(state["steps"]) else "no"}

    def after_agent(state: LoopState) -> str:
        if state["messages"] and state["messages"][-1].get("tool_calls"):
            return "tools"
        return "agent" if state["index"] < len(state["steps"]) else "verify"

    graph = StateGraph(LoopState)
    graph.add_node("plan", plan)
    graph.add_node("agent", agent)
    graph.add_node("tools", tools)
    graph.add_node("verify", verify)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "agent")
    graph.add_conditional_edges("agent", after_agent, ["tools", "agent", "verify"])
    graph.add_edge("tools", "agent")
    graph.add_edge("verify", END)
    saver = SqliteSaver(sqlite3.connect(path, check_same_thread=False))
    app = graph.compile(checkpointer=saver)
    threads = iter(range(1, 10**9))

    def run_once() -> float:
        config = {"configurable": {"thread_id": str(next(threads))}, "recursion_limit": 10**6}
        start = {"steps": [], "index": 0, "messages": [], "outputs": [], "verdict": ""}
        started = time.perf_counter()
        final = app.invoke(start, config)
        elapsed = time.perf_counter() - started
        assert final["verdict"] == "done" and len(final["outputs"]) == steps, final
        return elapsed

    return run_once


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()

    import os

    os.environ.setdefault("AGENT_MAX_STEPS", str(args.steps))
    os.environ.setdefault("RUN_MAX_TOOL_CALLS", str(args.steps * 2))
    os.environ.pop("DATABASE_URL", None)  # both on SQLite files in the scratch directory
    scratch, valkey = start_django("langgraph")
    from importlib.metadata import version

    from tests.support.instant import agentdesk_run

    langgraph_once = langgraph_loop(args.steps, str(scratch / "langgraph.sqlite3"))
    # One of each first, unmeasured: imports, connections, the first statements prepared.
    agentdesk_run(args.steps, count=False)
    langgraph_once()
    ours, theirs = [], []
    for _ in range(args.rounds):
        elapsed, _, run = agentdesk_run(args.steps, count=False)
        assert run.status == "succeeded", (run.status, run.error_message)
        ours.append(elapsed * 1000 / args.steps)
        theirs.append(langgraph_once() * 1000 / args.steps)
    agentdesk, langgraph = statistics.median(ours), statistics.median(theirs)
    ratio = statistics.median(a / b for a, b in zip(ours, theirs, strict=True))
    print(
        f"compare_langgraph: {args.steps} steps, {args.rounds} rounds alternating, SQLite "
        f"(langgraph {version('langgraph')}, SqliteSaver {version('langgraph-checkpoint-sqlite')})"
    )
    print(f"  AgentDesk    median {agentdesk:6.2f} ms per step (fastest {min(ours):.2f})")
    print(f"  LangGraph    median {langgraph:6.2f} ms per step (fastest {min(theirs):.2f})")
    verdict = "met" if ratio <= TARGET else "not met"
    print(
        f"  ratio        {ratio:.2f}x LangGraph (median of the rounds' ratios; "
        f"{agentdesk / langgraph:.2f}x of the medians)   target <= {TARGET}x: {verdict}"
    )
    if valkey is not None:
        valkey.stop()


if __name__ == "__main__":
    main()
