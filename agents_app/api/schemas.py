"""The REST API's request and response schemas (django-ninja), which also document it in
OpenAPI. The MCP server reuses them for its structured output."""

from datetime import datetime
from typing import Any

from ninja import Field, Schema

from agents_app.models import RunStatus, TimeoutStrategy
from agents_app.runs.services import APPROVAL_TIMEOUT_MAX


class TaskIn(Schema):
    task: str = Field(description="What the agent should do.")
    context: dict[str, Any] | None = Field(default=None, description="Any JSON object, < 1 MB.")
    wait: bool = Field(default=False, description="Answer with the AgentResult once finished.")
    wait_timeout: float | None = Field(
        default=None, gt=0, description="Seconds to wait (capped by API_MAX_WAIT)."
    )
    max_tokens: int | None = Field(default=None, ge=1, description="LLM token budget of the run.")
    max_tool_calls: int | None = Field(default=None, ge=1, description="Tool call budget.")
    approve_plan: bool = Field(
        default=False, description="Wait for a person to approve the plan before any step runs."
    )
    approval_timeout: int | None = Field(
        default=None,
        ge=1,
        le=APPROVAL_TIMEOUT_MAX,
        description="Seconds an approval waits for a person; null: APPROVAL_TIMEOUT.",
    )
    approval_on_timeout: TimeoutStrategy | None = Field(
        default=None,
        description="What an expired approval decides; null: APPROVAL_TIMEOUT_STRATEGY.",
    )


class RunLinks(Schema):
    self: str
    events: str
    cancel: str
    restart: str
    websocket: str


class RunSummary(Schema):
    id: int
    task_id: int
    task: str
    attempt: int
    status: str
    replans: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    final_response: str
    error_code: str
    error_message: str
    prompt_tokens: int
    completion_tokens: int
    tool_calls_made: int
    max_tokens: int
    max_tool_calls: int
    links: RunLinks


class Accepted(Schema):
    success: bool = True
    run_id: int
    status: str
    links: RunLinks


class ToolCallOut(Schema):
    id: int
    tool: str
    arguments: dict[str, Any]
    result: Any
    error: str
    status: str
    attempt: int
    duration_ms: int | None
    created_at: datetime


class StepOut(Schema):
    index: int
    objective: str
    tool_names: list[str]
    reasoning: str
    depends_on: list[int]
    status: str
    output: str
    error: str
    retry_count: int
    started_at: datetime | None
    finished_at: datetime | None
    tool_calls: list[ToolCallOut]


class PlanOut(Schema):
    version: int
    reason: str
    created_at: datetime
    steps: list[StepOut]


class RunDetail(RunSummary):
    context: dict[str, Any]
    plans: list[PlanOut]


class RunPage(Schema):
    success: bool = True
    count: int
    page: int
    page_size: int
    results: list[RunSummary]


class EventOut(Schema):
    seq: int
    type: str
    payload: dict[str, Any]
    created_at: datetime


class EventPage(Schema):
    success: bool = True
    run_id: int
    status: str
    events: list[EventOut]
    last_seq: int
    has_more: bool


class RunListQuery(Schema):
    status: RunStatus | None = Field(
        default=None,
        description="Only runs in this status; `waiting_approval`: parked on a person's decision.",
    )
    page: int = Field(default=1, ge=1)
    page_size: int = Field(default=20, ge=1, le=100)
