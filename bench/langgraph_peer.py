"""The peer bench/throughput.py measures AgentDesk's runs beside: a LangGraph agent with its
PostgreSQL checkpointer, one run per Celery task. A worker loads it with
`-I bench.langgraph_peer` (it needs the `bench` uv group: langgraph, its PostgreSQL saver).

The graph is the usual tool-calling agent: a node `agent` that asks the model (the official
OpenAI SDK, chat.completions streamed with usage, as AgentDesk's provider asks it), then
`tools` when the answer calls tools (each call answered by a no-op) and back to `agent`, else
the end. Each process builds it once, on its first task: the graph, a PostgresSaver on a
psycopg pool of at most WORKER_DATABASE_CONNECTIONS connections (AgentDesk's worker processes
hold at most as many), connected as PostgresSaver.from_conn_string connects (autocommit,
prepare_threshold=0, dict rows), its tables in the schema LANGGRAPH_PEER_SCHEMA (the bench
creates them), and one OpenAI client. What it sends the model is what AgentDesk's one-step run
sent (the bench writes it to the JSON file LANGGRAPH_PEER_REQUEST before the first task): its
system prompt, its tools' definitions, its max_tokens, with the user's message "Task: <text>".

A task ends by counting itself in Redis (`<counter>:done`, or `<counter>:failed` when the run
raised or ended without an answer), as the bench waits for that.
"""

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any, TypedDict

import redis
from celery import shared_task
from django.conf import settings

logger = logging.getLogger(__name__)


class AgentState(TypedDict):
    messages: list[dict[str, Any]]


_lock = threading.Lock()
_built: dict[str, Any] = {}


def _agent() -> dict[str, Any]:
    """This process's graph, the request's fixed parts and its Redis client, built once."""
    with _lock:
        if not _built:
            _built.update(_build())
        return _built


def _build() -> dict[str, Any]:
    import openai
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.graph import END, START, StateGraph
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    request = json.loads(Path(os.environ["LANGGRAPH_PEER_REQUEST"]).read_text())
    options = " ".join(
        filter(
            None,
            [
                os.environ.get("PGOPTIONS", ""),
                f"-c search_path={os.environ['LANGGRAPH_PEER_SCHEMA']}",
            ],
        )
    )
    pool = ConnectionPool(
        os.environ["DATABASE_URL"],
        min_size=1,
        max_size=settings.WORKER_DATABASE_CONNECTIONS,
        kwargs={
            "autocommit": True,
            "prepare_threshold": 0,
            "row_factory": dict_row,
            "options": options,
        },
        open=True,
    )
    client = openai.OpenAI(
        base_url=os.environ["LLM_BASE_URL"],
        api_key=os.environ.get("LLM_API_KEY") or "not-needed",
        max_retries=0,
        timeout=120,
    )
    model, tools, max_tokens = os.environ["LLM_MODEL"], request["tools"], request["max_tokens"]

    def agent(state: AgentState) -> dict[str, Any]:
        stream = client.chat.completions.create(
            model=model,
            messages=state["messages"],
            tools=tools,
            max_tokens=max_tokens,
            stream=True,
            stream_options={"include_usage": True},
        )
        content: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        with stream:
            for chunk in stream:
                for choice in chunk.choices:
                    delta = choice.delta
                    if delta.content:
                        content.append(delta.content)
                    for call in delta.tool_calls or []:
                        slot = calls.setdefault(
                            call.index,
                            {
                                "id": "",
                                "type": "function",
                                "function": {"name": "", "arguments": ""},
                            },
                        )
                        slot["id"] = call.id or slot["id"]
                        if call.function is not None:
                            slot["function"]["name"] += call.function.name or ""
                            slot["function"]["arguments"] += call.function.arguments or ""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(content) or None}
        if calls:
            message["tool_calls"] = [calls[index] for index in sorted(calls)]
        return {"messages": [*state["messages"], message]}

    def run_tools(state: AgentState) -> dict[str, Any]:
        results = [
            {"role": "tool", "tool_call_id": call["id"], "content": "{}"}
            for call in state["messages"][-1]["tool_calls"]
        ]
        return {"messages": [*state["messages"], *results]}

    def after_agent(state: AgentState) -> str:
        return "tools" if state["messages"][-1].get("tool_calls") else END

    graph = StateGraph(AgentState)
    graph.add_node("agent", agent)
    graph.add_node("tools", run_tools)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", after_agent, ["tools", END])
    graph.add_edge("tools", "agent")
    return {
        "app": graph.compile(checkpointer=PostgresSaver(pool)),
        "system": request["system"],
        "redis": redis.Redis.from_url(settings.REDIS_URL),
    }


@shared_task(name="bench.langgraph_run", ignore_result=True, acks_late=True)
def langgraph_run(thread_id: str, text: str, counter: str) -> None:
    built = _agent()
    start = {
        "messages": [
            {"role": "system", "content": built["system"]},
            {"role": "user", "content": f"Task: {text}"},
        ]
    }
    try:
        final = built["app"].invoke(start, {"configurable": {"thread_id": thread_id}})
        answered = bool(final["messages"][-1].get("content"))
    except Exception:
        logger.exception("the LangGraph run %s failed", thread_id)
        answered = False
    built["redis"].incr(f"{counter}:{'done' if answered else 'failed'}")
