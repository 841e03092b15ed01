"""REST endpoints for contract agents (seed 002): list, create, read and change one; Start,
Stop and Restart; its attempts, each one's transcript after a seq and its log file. Schema in,
service or selector, presenter out; another user's agent is a 404 like a missing one."""

from datetime import datetime
from typing import Annotated, Any, Literal

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema, Status
from pydantic import ConfigDict, StrictInt

from agents_app.api.conversations import (
    ENTRIES_MAX,
    ConnectionRef,
    EntryPage,
    entries_page,
)
from agents_app.api.pagination import page_of
from agents_app.api.schemas import Count, Flag, NonBlankText, Page, PageSize, Text, errors
from agents_app.contracts import selectors, services
from agents_app.contracts.presenters import agent_payload, attempt_payload
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.inputs import QUERY_INT_MAX
from agents_app.models import AuditInterface, ContractAgent, Run
from agents_app.web.agent_tabs import log_download

router = Router(tags=["agents"])

AgentStatus = Literal["ready", "running", "stopped", "completed", "failed"]
AttemptNumber = Annotated[int, Field(ge=1, le=QUERY_INT_MAX)]

AgentConnection = Annotated[
    Annotated[StrictInt, Field(ge=1, le=QUERY_INT_MAX)] | Text | None,
    Field(
        description="The LLM connection its attempts use: an id or name from GET "
        "/api/v1/connections; null: the default one, whichever it is at each start."
    ),
]
Name = Annotated[Text, Field(max_length=services.NAME_CHARS)]
Contract = Annotated[
    NonBlankText,
    Field(
        max_length=services.CONTRACT_MAX_CHARS,
        description="What the agent must achieve; after each tool cycle the model judges its "
        "work against it.",
    ),
]
Budget = Annotated[
    Count | None,
    Field(description="A limit of each attempt; null: the CONTRACT_MAX_* default at each start."),
]


class _Strict(Schema):
    """A body with a field this API does not know is refused (400), not silently ignored."""

    model_config = ConfigDict(extra="forbid")


class AgentIn(_Strict):
    contract: Contract
    name: Name | None = Field(default=None, description="null or empty: Agent-N.")
    connection: AgentConnection = None
    max_turns: Budget = None
    max_tokens: Budget = None
    max_seconds: Budget = None


class AgentChange(_Strict):
    """Only the fields sent change. The contract, connection and budgets are fixed while an
    attempt runs (409); they apply from the next start."""

    name: Name = None
    contract: Contract = None
    connection: AgentConnection = None
    max_turns: Budget = None
    max_tokens: Budget = None
    max_seconds: Budget = None
    is_open: Flag = Field(default=None, description="false: its tab is closed on the chat page.")


class RestartIn(AgentChange):
    """Changes to make before the new attempt starts (only the fields sent); `{}` for none."""


class BudgetsOut(Schema):
    max_turns: int = Field(description="Tool cycles, each judged against the contract.")
    max_tokens: int = Field(description="LLM tokens.")
    max_seconds: int = Field(description="Wall-clock seconds.")
    defaults: list[str] = Field(description="The budgets that follow the CONTRACT_MAX_* defaults.")


class AttemptBudgets(Schema):
    max_turns: int
    max_tokens: int
    max_seconds: int


class AttemptOut(Schema):
    number: int = Field(description="1 for the first Start, then one more per Restart.")
    run_id: int = Field(description="The attempt's run (kind contract): /api/v1/runs/{id}.")
    conversation_id: int = Field(
        description="Its transcript; streamed by the WebSocket /ws/api/conversations/{id}/."
    )
    status: str = Field(description="The run's status.")
    outcome: AgentStatus = Field(description="The agent status this attempt gives.")
    reason: str = Field(description="Why it stopped or failed; the verdict when completed.")
    started_at: datetime | None
    finished_at: datetime | None
    created_at: datetime
    tokens_used: int
    cycles: int = Field(description="The tool cycle it is in or ended in; 0 before it started.")
    budgets: AttemptBudgets
    log_name: str = Field(description="Its log file's name.")


class AgentOut(Schema):
    id: int
    name: str
    contract: str
    connection: ConnectionRef | None = Field(description="null: the default connection.")
    budgets: BudgetsOut = Field(description="The budgets of the next attempt.")
    status: AgentStatus
    reason: str = Field(description="Why the latest attempt stopped or failed.")
    attempt: AttemptOut | None = Field(description="The latest attempt; null: never started.")
    is_open: bool
    created_at: datetime
    updated_at: datetime


class AgentPage(Schema):
    success: bool = True
    count: int
    page: int
    page_size: int
    results: list[AgentOut]


class AttemptPage(Schema):
    success: bool = True
    count: int
    page: int
    page_size: int
    results: list[AttemptOut]


class ListQuery(Schema):
    page: Page = 1
    page_size: PageSize = 20


def agent_page(user: Any, page: int, page_size: int) -> dict[str, Any]:
    """One page of the user's agents, most recently changed or started first (REST and MCP)."""
    listed = page_of(selectors.agents_for(user), page, page_size, lambda a: a)
    states = selectors.agent_states(listed["results"])
    listed["results"] = [agent_payload(a, states[a.pk]) for a in listed["results"]]
    return listed


def attempt_page(agent: ContractAgent, page: int, page_size: int) -> dict[str, Any]:
    """One page of the agent's attempts, newest first (REST and MCP)."""
    runs = selectors.attempts(agent).select_related("conversation__agent", "task")
    return page_of(runs, page, page_size, attempt_payload)


def present(agent: ContractAgent) -> dict[str, Any]:
    agent.refresh_from_db()
    return agent_payload(agent)


def attempt_of(agent: ContractAgent, number: int | None) -> Run:
    """Attempt `number`, or the latest for None; NOT_FOUND when there is none."""
    if number is not None:
        return selectors.attempt_get(agent=agent, number=number)
    run = selectors.latest_attempt(agent)
    if run is None:
        raise DomainError(
            ErrorCode.NOT_FOUND,
            f"{agent.name} has no attempt yet: start it first",
            {"agent_id": agent.pk},
        )
    return run


LOG_RESPONSE = {
    "responses": {
        200: {
            "description": "The log file, as an attachment named like the file on disk. When "
            "the file could not be written, the text rendered from the attempt's rows is sent "
            "anyway, with the reason in the X-Log-Write-Error header.",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        }
    }
}


@router.get("/agents", response=AgentPage, summary="List your contract agents")
def list_agents(request: HttpRequest, query: Query[ListQuery]):
    """Your agents, most recently changed or started first, each with its status and latest
    attempt."""
    return agent_page(request.user, query.page, query.page_size)


@router.post("/agents", response={201: AgentOut, **errors(503)}, summary="Create a contract agent")
def create_agent(request: HttpRequest, payload: AgentIn):
    """A new agent, Ready (201); Start it with POST /agents/{id}/start. An unknown or disabled
    connection is a 400; 503 LLM_NOT_CONFIGURED when no usable LLM is configured."""
    agent = services.agent_create(
        owner=request.user, interface=AuditInterface.API, **payload.model_dump()
    )
    return Status(201, agent_payload(agent))


@router.get("/agents/{int:agent_id}", response=AgentOut, summary="A contract agent's status")
def get_agent(request: HttpRequest, agent_id: int):
    """The agent with its status (ready, running, stopped, completed, failed), the reason and
    its latest attempt."""
    return agent_payload(selectors.agent_get(user=request.user, agent_id=agent_id))


@router.patch(
    "/agents/{int:agent_id}",
    response={200: AgentOut, **errors(409, 503)},
    summary="Change a contract agent",
)
def change_agent(request: HttpRequest, agent_id: int, payload: AgentChange):
    """Only the fields sent. 409 for the contract, connection or budgets while it runs."""
    agent = selectors.agent_get(user=request.user, agent_id=agent_id)
    return agent_payload(
        services.agent_update(
            agent=agent,
            actor=request.user,
            interface=AuditInterface.API,
            **payload.model_dump(exclude_unset=True),
        )
    )


@router.post(
    "/agents/{int:agent_id}/start",
    response={201: AgentOut, **errors(409, 503)},
    summary="Start a contract agent",
)
def start_agent(request: HttpRequest, agent_id: int):
    """A new attempt, queued for a worker (201: the agent, running). 409 while an attempt runs;
    503 while the kill switch is engaged. Follow it with GET /agents/{id}, its attempt's
    entries, or the WebSocket of its conversation."""
    agent = selectors.agent_get(user=request.user, agent_id=agent_id)
    services.agent_start(agent=agent, actor=request.user, interface=AuditInterface.API)
    return Status(201, present(agent))


@router.post(
    "/agents/{int:agent_id}/stop",
    response={200: AgentOut, **errors(409)},
    summary="Stop a contract agent",
)
def stop_agent(request: HttpRequest, agent_id: int):
    """The LLM request in flight finishes, no further one is made, the output stays; the agent
    is Stopped once the worker has let go. 409 when nothing runs."""
    agent = selectors.agent_get(user=request.user, agent_id=agent_id)
    services.agent_stop(agent=agent, actor=request.user, interface=AuditInterface.API)
    return present(agent)


@router.post(
    "/agents/{int:agent_id}/restart",
    response={201: AgentOut, **errors(409, 503)},
    summary="Restart a contract agent",
)
def restart_agent(request: HttpRequest, agent_id: int, payload: RestartIn | None = None):
    """After a stop, a failure or completion: apply the changes sent (`{}` for none) and start
    a new attempt (201). 409 while it runs or when it never started; 503 while the kill switch
    is engaged."""
    agent = selectors.agent_get(user=request.user, agent_id=agent_id)
    services.agent_restart(
        agent=agent,
        actor=request.user,
        interface=AuditInterface.API,
        **(payload.model_dump(exclude_unset=True) if payload else {}),
    )
    return Status(201, present(agent))


@router.get(
    "/agents/{int:agent_id}/attempts", response=AttemptPage, summary="A contract agent's attempts"
)
def list_attempts(request: HttpRequest, agent_id: int, query: Query[ListQuery]):
    """Its attempts, newest first."""
    agent = selectors.agent_get(user=request.user, agent_id=agent_id)
    return attempt_page(agent, query.page, query.page_size)


@router.get(
    "/agents/{int:agent_id}/attempts/{int:number}/entries",
    response=EntryPage,
    summary="An attempt's transcript after a seq",
)
def list_attempt_entries(
    request: HttpRequest,
    agent_id: int,
    number: AttemptNumber,
    after: int = Query(0, ge=0, le=QUERY_INT_MAX),
    limit: int = Query(500, ge=1, le=ENTRIES_MAX),
):
    """The attempt's output: transcript rows with seq > `after` (the contract, the agent's
    messages and reasoning, its tool calls and results), as a conversation's; running_answer
    is the attempt while it runs. Poll with the last `last_seq`, or follow the WebSocket
    /ws/api/conversations/{conversation_id}/?after=SEQ."""
    agent = selectors.agent_get(user=request.user, agent_id=agent_id)
    run = selectors.attempt_get(agent=agent, number=number)
    return entries_page(run.conversation, after=after, limit=limit)


@router.get(
    "/agents/{int:agent_id}/attempts/{int:number}/log",
    summary="Download an attempt's log file",
    openapi_extra=LOG_RESPONSE,
)
def attempt_log(request: HttpRequest, agent_id: int, number: AttemptNumber):
    """The attempt's timestamped log, rendered again from its rows (so it is complete even
    after a crash) and written to its file once the attempt ended."""
    agent = selectors.agent_get(user=request.user, agent_id=agent_id)
    return log_download(attempt_of(agent, number))


@router.get(
    "/agents/{int:agent_id}/log",
    summary="Download the latest attempt's log file",
    openapi_extra=LOG_RESPONSE,
)
def latest_log(request: HttpRequest, agent_id: int):
    """The latest attempt's log, as /agents/{id}/attempts/{number}/log. 404 when the agent
    never started."""
    agent = selectors.agent_get(user=request.user, agent_id=agent_id)
    return log_download(attempt_of(agent, None))
