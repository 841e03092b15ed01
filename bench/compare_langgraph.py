"""AgentDesk's engine against LangGraph on the same plan-execute loop, per step, on SQLite, or
with --postgres on PostgreSQL.

Both run N steps (50 by default): plan, then for each step a model turn that calls a no-op
tool, the tool, and a model turn that answers; then verify. The model answers at once in both
(tests/support/instant.py's script), so what is measured is what each framework adds to a step:
AgentDesk its rows, events, audit and lease on SQLite (+ an embedded Valkey for the events);
LangGraph its checkpoint after every node (SqliteSaver, in a file). The two alternate in one
process, several rounds; the medians of ms per step are printed, and the ratio as the median of
each round's own (AgentDesk's run against the LangGraph run beside it): a slower minute of the
machine falls on both runs of a round, so the ratio holds while the machine's speed drifts.

    uv run --group bench python bench/compare_langgraph.py [--steps 50] [--rounds 11]

With --postgres, both on PostgreSQL (issue 31): AgentDesk on DATABASE_URL (it must then be a
PostgreSQL URL; unset, postgres://postgres@127.0.0.1:5432/test), migrated as any benchmark's,
and LangGraph's PostgresSaver on the same database, its tables in a schema of its own
(langgraph_bench_<pid>, dropped at the end), on one psycopg connection as
PostgresSaver.from_conn_string makes it (autocommit, prepare_threshold=0, dict rows). Events go
to REDIS_URL if set, else to an embedded Valkey, as on SQLite. Target: AgentDesk at most 1.0x
LangGraph per step. Without --postgres, DATABASE_URL is ignored: SQLite, as before.

On PostgreSQL a commit waits for its WAL to reach the disk, and the two commit differently
(AgentDesk twice a step; LangGraph's saver, in autocommit, once for each checkpoint and each
node's writes: about six a step), so what the disk's flush costs weighs on the ratio; the first
line says synchronous_commit as the connections have it. PGOPTIONS applies to both connections:
PGOPTIONS="-c synchronous_commit=off" leaves the flush out of both, the figures of a server whose
flush is cheap.

    uv run --group bench python bench/compare_langgraph.py --postgres [--steps 50] [--rounds 11]
"""

import argparse
import os
import sqlite3
import statistics
import time
from collections.abc import Callable
from typing import Any, TypedDict

from harness import start_django  # noqa: E402  (bench/ is on sys.path when run as a script)

TARGET = 0.8  # issue 16: AgentDesk's ms per step at most 0.8x LangGraph's, on SQLite
TARGET_POSTGRES = 1.0  # issue 31: at most LangGraph's, on PostgreSQL
PG_URL = "postgres://postgres@127.0.0.1:5432/test"  # --postgres without DATABASE_URL


class LoopState(TypedDict):
    steps: list[str]
    index: int
    messages: list[dict[str, Any]]
    outputs: list[str]
    verdict: str


def langgraph_loop(steps: int, saver: Any) -> Callable[[], float]:
    """The loop as a LangGraph graph with this checkpointer; returns a function that runs it
    once on a new thread and returns the seconds it took."""
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


def sqlite_saver(path: str) -> Any:
    from langgraph.checkpoint.sqlite import SqliteSaver

    return SqliteSaver(sqlite3.connect(path, check_same_thread=False))


def postgres_saver(url: str, schema: str) -> tuple[Any, Callable[[], None]]:
    """A PostgresSaver on `url`, its tables in `schema` (created here, new); returns it and
    what drops the schema and closes its connection."""
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg import Connection, sql
    from psycopg.rows import dict_row

    # As PostgresSaver.from_conn_string connects, with the schema first on the search path
    # (and PGOPTIONS, which libpq would otherwise drop for these options, as Django's has it).
    options = " ".join(filter(None, [os.environ.get("PGOPTIONS", ""), f"-c search_path={schema}"]))
    conn = Connection.connect(
        url, autocommit=True, prepare_threshold=0, row_factory=dict_row, options=options
    )
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    saver = PostgresSaver(conn)
    saver.setup()

    def drop() -> None:
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
        conn.close()

    return saver, drop


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="both on PostgreSQL: DATABASE_URL, else " + PG_URL,
    )
    args = parser.parse_args()

    os.environ.setdefault("AGENT_MAX_STEPS", str(args.steps))
    os.environ.setdefault("RUN_MAX_TOOL_CALLS", str(args.steps * 2))
    if args.postgres:
        url = os.environ.setdefault("DATABASE_URL", PG_URL)
        if not url.startswith(("postgres://", "postgresql://")):
            parser.error(f"--postgres: DATABASE_URL is not a PostgreSQL URL: {url}")
    else:
        os.environ.pop("DATABASE_URL", None)  # both on SQLite files in the scratch directory
    scratch, valkey = start_django("langgraph")
    from importlib.metadata import version

    if args.postgres:
        saver, drop = postgres_saver(os.environ["DATABASE_URL"], f"langgraph_bench_{os.getpid()}")
        # What a commit waits for decides much of both figures: say it.
        server = saver.conn.execute(
            "SELECT current_setting('server_version') AS version, "
            "current_setting('synchronous_commit') AS sync"
        ).fetchone()
        database, saver_name, package, target = (
            f"PostgreSQL {server['version'].split()[0]} synchronous_commit={server['sync']}",
            "PostgresSaver",
            "langgraph-checkpoint-postgres",
            TARGET_POSTGRES,
        )
    else:
        saver, drop = sqlite_saver(str(scratch / "langgraph.sqlite3")), None
        database, saver_name, package, target = (
            "SQLite",
            "SqliteSaver",
            "langgraph-checkpoint-sqlite",
            TARGET,
        )
    try:
        ours, theirs = compare(args.steps, args.rounds, langgraph_loop(args.steps, saver))
    finally:
        if drop is not None:
            drop()
        if valkey is not None:
            valkey.stop()
    agentdesk, langgraph = statistics.median(ours), statistics.median(theirs)
    ratio = statistics.median(a / b for a, b in zip(ours, theirs, strict=True))
    print(
        f"compare_langgraph: {args.steps} steps, {args.rounds} rounds alternating, {database} "
        f"(langgraph {version('langgraph')}, {saver_name} {version(package)})"
    )
    print(f"  AgentDesk    median {agentdesk:6.2f} ms per step (fastest {min(ours):.2f})")
    print(f"  LangGraph    median {langgraph:6.2f} ms per step (fastest {min(theirs):.2f})")
    verdict = "met" if ratio <= target else "not met"
    print(
        f"  ratio        {ratio:.2f}x LangGraph (median of the rounds' ratios; "
        f"{agentdesk / langgraph:.2f}x of the medians)   target <= {target}x: {verdict}"
    )


def compare(
    steps: int, rounds: int, langgraph_once: Callable[[], float]
) -> tuple[list[float], list[float]]:
    """Each one's ms per step, a run of each a round, AgentDesk first."""
    from tests.support.instant import agentdesk_run

    # One of each first, unmeasured: imports, connections, the first statements prepared.
    agentdesk_run(steps, count=False)
    langgraph_once()
    ours, theirs = [], []
    for _ in range(rounds):
        elapsed, _, run = agentdesk_run(steps, count=False)
        assert run.status == "succeeded", (run.status, run.error_message)
        ours.append(elapsed * 1000 / steps)
        theirs.append(langgraph_once() * 1000 / steps)
    return ours, theirs


if __name__ == "__main__":
    main()
