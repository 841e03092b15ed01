"""The shapes of contract agents that REST (/api/v1/agents) and MCP answer with, and a page of
them; the payloads come from agents_app.contracts.presenters."""

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Field, Schema
from pydantic import ConfigDict, StrictInt

from agents_app.api.conversations.schemas import ConnectionRef
from agents_app.api.pagination import page_of
from agents_app.api.schemas import Count, Flag, NonBlankText, Page, PageSize, Text
from agents_app.contracts import selectors, services
from agents_app.contracts.presenters import agent_payload, attempt_payload
from agents_app.core.inputs import QUERY_INT_MAX
from agents_app.models import ContractAgent

# contracts.selectors.AgentStatus spelled as a literal, so the OpenAPI document lists plain
# strings (tests/contracts/test_agent_status.py checks the two agree).
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
