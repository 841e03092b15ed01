"""The MCP server's contract agent tools: list and create agents, Start, Stop and Restart one,
read its status and an attempt's log. The same services, selectors and shapes as
/api/v1/agents (without REST's `success` flag), as the key's user: another user's agent is
NOT_FOUND. Importing this module registers them on
`api.mcp_server.server`."""

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp_types import ToolAnnotations
from ninja import Schema
from pydantic import Field

from agents_app.api.agents.schemas import (
    AgentConnection,
    AgentOut,
    AttemptNumber,
    AttemptOut,
    Budget,
    Contract,
    Name,
    agent_page,
)
from agents_app.api.mcp_server import READ_ONLY, caller, in_django, tool
from agents_app.api.schemas import Id, Page, PageSize
from agents_app.contracts import selectors, services
from agents_app.contracts.logs import log_path, log_text
from agents_app.contracts.presenters import agent_now, agent_payload, attempt_payload
from agents_app.models import AuditInterface


class AgentList(Schema):
    count: int
    page: int
    page_size: int
    results: list[AgentOut]


class AgentLog(Schema):
    attempt: AttemptOut
    name: str = Field(description="The log file's name.")
    text: str = Field(description="The log, rendered from the attempt's rows.")
    write_error: str | None = Field(
        description="Why the log file could not be written; null when it was (or the attempt "
        "still runs, and its worker writes it)."
    )


AgentId = Annotated[Id, Field(description="The agent's id (from create_agent or list_agents).")]
STARTS = ToolAnnotations(destructive_hint=False, idempotent_hint=False)


@tool(annotations=READ_ONLY)
async def list_agents(
    ctx: Context,
    page: Page = 1,
    page_size: Annotated[PageSize, Field(description="Agents per page.")] = 20,
) -> AgentList:
    """Your contract agents, most recently changed or started first, each with its status
    (ready, running, stopped, completed, failed), the reason and its latest attempt."""

    def listed(user: Any) -> AgentList:
        return AgentList.model_validate(agent_page(user, page, page_size))

    return await in_django(listed, caller(ctx))


@tool(annotations=STARTS)
async def create_agent(
    ctx: Context,
    contract: Contract,
    name: Annotated[Name | None, Field(description="null or empty: Agent-N.")] = None,
    connection: AgentConnection = None,
    max_turns: Budget = None,
    max_tokens: Budget = None,
    max_seconds: Budget = None,
) -> AgentOut:
    """Create a contract agent, Ready: a model that works on `contract` autonomously, a tool
    cycle at a time, judging its work against it after each. Start it with start_agent."""

    def create(user: Any) -> AgentOut:
        agent = services.agent_create(
            owner=user,
            interface=AuditInterface.MCP,
            contract=contract,
            name=name,
            connection=connection,
            max_turns=max_turns,
            max_tokens=max_tokens,
            max_seconds=max_seconds,
        )
        return AgentOut.model_validate(agent_payload(agent))

    return await in_django(create, caller(ctx))


@tool(annotations=STARTS)
async def start_agent(ctx: Context, agent_id: AgentId) -> AgentOut:
    """Start an attempt, queued for a worker. CONFLICT while one runs; SERVICE_UNAVAILABLE
    while the kill switch is engaged. Follow it with agent_status until it is no longer
    running, then read_agent_log."""

    def start(user: Any) -> AgentOut:
        agent = selectors.agent_get(user=user, agent_id=agent_id)
        services.agent_start(agent=agent, actor=user, interface=AuditInterface.MCP)
        return AgentOut.model_validate(agent_now(agent))

    return await in_django(start, caller(ctx))


@tool(annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=False))
async def stop_agent(
    ctx: Context,
    agent_id: AgentId,
    now: Annotated[
        bool,
        Field(description="Cut the LLM request in flight at once (also after a stop)."),
    ] = False,
) -> AgentOut:
    """Stop the running attempt: the LLM request in flight finishes, no further one is made,
    the output stays; with `now`, the request in flight is cut at once, what the model had
    written kept. CONFLICT when nothing runs."""

    def stop(user: Any) -> AgentOut:
        agent = selectors.agent_get(user=user, agent_id=agent_id)
        services.agent_stop(agent=agent, actor=user, interface=AuditInterface.MCP, now=now)
        return AgentOut.model_validate(agent_now(agent))

    return await in_django(stop, caller(ctx))


@tool(annotations=STARTS)
async def restart_agent(
    ctx: Context,
    agent_id: AgentId,
    contract: Annotated[Contract | None, Field(description="null: unchanged.")] = None,
) -> AgentOut:
    """After a stop, a failure or completion: start a new attempt, with a new contract if one
    is given. CONFLICT while it runs or when it never started (use start_agent)."""

    def restart(user: Any) -> AgentOut:
        agent = selectors.agent_get(user=user, agent_id=agent_id)
        changes = {} if contract is None else {"contract": contract}
        services.agent_restart(agent=agent, actor=user, interface=AuditInterface.MCP, **changes)
        return AgentOut.model_validate(agent_now(agent))

    return await in_django(restart, caller(ctx))


@tool(annotations=READ_ONLY)
async def agent_status(ctx: Context, agent_id: AgentId) -> AgentOut:
    """The agent's status (ready, running, stopped, completed, failed) with the reason (who or
    which budget stopped it, stuck, the error, or the verdict that met the contract), its
    budgets and its latest attempt (tokens used, cycles)."""

    def status(user: Any) -> AgentOut:
        return AgentOut.model_validate(
            agent_payload(selectors.agent_get(user=user, agent_id=agent_id))
        )

    return await in_django(status, caller(ctx))


@tool(annotations=READ_ONLY)
async def read_agent_log(
    ctx: Context,
    agent_id: AgentId,
    attempt: Annotated[
        AttemptNumber | None, Field(description="The attempt's number; null: the latest.")
    ] = None,
) -> AgentLog:
    """An attempt's timestamped log (what it said, its tool calls and results, each
    evaluation of the contract, how it ended), rendered from its rows. NOT_FOUND when the
    agent never started or has no such attempt."""

    def read(user: Any) -> AgentLog:
        agent = selectors.agent_get(user=user, agent_id=agent_id)
        run = selectors.attempt_of(agent, attempt)
        text, problem = log_text(run)
        return AgentLog.model_validate(
            {
                "attempt": attempt_payload(run),
                "name": log_path(run).name,
                "text": text,
                "write_error": problem,
            }
        )

    return await in_django(read, caller(ctx))
