"""REST endpoints for contract agents (seed 002): list, create, read and change one; Start,
Stop and Restart; its attempts, each one's transcript after a seq and its log file. Schema in,
service or selector, presenter out; another user's agent is a 404 like a missing one."""

from django.http import HttpRequest
from ninja import Query, Router, Status

from agents_app.api.agents.schemas import (
    AgentChange,
    AgentIn,
    AgentOut,
    AgentPage,
    AttemptNumber,
    AttemptPage,
    ListQuery,
    RestartIn,
    agent_page,
    attempt_page,
)
from agents_app.api.conversations.schemas import ENTRIES_MAX, EntryPage
from agents_app.api.schemas import errors
from agents_app.contracts import selectors, services
from agents_app.contracts.downloads import log_download
from agents_app.contracts.presenters import agent_now, agent_payload
from agents_app.conversations.presenters import transcript_after
from agents_app.core.inputs import QUERY_INT_MAX
from agents_app.models import AuditInterface

router = Router(tags=["agents"])

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
    return Status(201, agent_now(agent))


@router.post(
    "/agents/{int:agent_id}/stop",
    response={200: AgentOut, **errors(409)},
    summary="Stop a contract agent",
)
def stop_agent(request: HttpRequest, agent_id: int, now: bool = False):
    """The LLM request in flight finishes, no further one is made, the output stays; the agent
    is Stopped once the worker has let go. `?now=true` (also after a stop) cuts the request in
    flight at once instead, what the model had written kept. 409 when nothing runs."""
    agent = selectors.agent_get(user=request.user, agent_id=agent_id)
    services.agent_stop(agent=agent, actor=request.user, interface=AuditInterface.API, now=now)
    return agent_now(agent)


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
    return Status(201, agent_now(agent))


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
    return transcript_after(run.conversation, after=after, limit=limit)


@router.get(
    "/agents/{int:agent_id}/attempts/{int:number}/log",
    summary="Download an attempt's log file",
    openapi_extra=LOG_RESPONSE,
)
def attempt_log(request: HttpRequest, agent_id: int, number: AttemptNumber):
    """The attempt's timestamped log, rendered again from its rows (so it is complete even
    after a crash) and written to its file once the attempt ended."""
    agent = selectors.agent_get(user=request.user, agent_id=agent_id)
    return log_download(selectors.attempt_of(agent, number))


@router.get(
    "/agents/{int:agent_id}/log",
    summary="Download the latest attempt's log file",
    openapi_extra=LOG_RESPONSE,
)
def latest_log(request: HttpRequest, agent_id: int):
    """The latest attempt's log, as /agents/{id}/attempts/{number}/log. 404 when the agent
    never started."""
    agent = selectors.agent_get(user=request.user, agent_id=agent_id)
    return log_download(selectors.attempt_of(agent, None))
