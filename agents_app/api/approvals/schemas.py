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
