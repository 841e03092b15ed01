"""The shape of an approval that REST (/api/v1/approvals) and MCP answer with; the payload comes
from agents_app.approvals.presenters."""

from typing import Any

from ninja import Field, Schema

from agents_app.models import ApprovalStatus


class ApprovalLinks(Schema):
    self: str
    decide: str
    run: str
    page: str


class Taint(Schema):
    """An argument that carries text from a tool's output (engine.taint)."""

    argument: str = Field(description="Where in the arguments: `url`, `a.b[1]`.")
    fragment: str = Field(description="The text it carries (at most 200 characters).")
    kind: str = Field(description="host, address, query, path or text.")
    source: str = Field(description="Where it came from, in words: `http_get call 12`.")
    tool_call_id: int | None = Field(description="The call whose result held it.")
    run_id: int | None = Field(description="The run of that call (a child's, or this run).")


class ApprovalOut(Schema):
    """`agents_app.approvals.approval_payload`, as events and webhooks show it too."""

    id: int
    run_id: int
    kind: str = Field(description="tool_call or plan.")
    status: ApprovalStatus
    tool: str
    arguments: dict[str, Any] = Field(description="As the model asked (a plan: its steps).")
    risk: str
    level: str
    reason: str
    reasoning: str
    taint: list[Taint] = Field(
        description="The arguments that came from a tool's output, not from you: such a call "
        "asks whatever its level, rule or YOLO, unless a rule of yours for its host, path "
        "prefix or command fits it."
    )
    step_index: int | None
    tool_call_id: int | None
    decision_arguments: dict[str, Any] | None = Field(description="The edited arguments.")
    decided_by: str | None
    decided_via: str | None
    decided_at: str | None
    expired: bool = Field(description="Decided by its timeout.")
    expires_at: str | None
    on_timeout: str | None
    created_at: str
    links: ApprovalLinks
