"""The JSON shape of an approval, for REST, MCP, webhooks and live pages alike."""

from agents_app.core.event_payloads import ApprovalPayload
from agents_app.models import (
    Approval,
)


def approval_payload(approval: Approval) -> ApprovalPayload:
    """An approval as events, REST and webhooks show it."""
    return {
        "id": approval.pk,
        "run_id": approval.run_id,
        "kind": approval.kind,
        "status": approval.status,
        "tool": approval.tool,
        "arguments": approval.arguments,
        "risk": approval.risk,
        "level": approval.level,
        "reason": approval.reason,
        "reasoning": approval.reasoning,
        "taint": approval.taint,
        "step_index": approval.step.index if approval.step_id else None,
        "tool_call_id": approval.tool_call_id,
        "decision_arguments": approval.decision_arguments,
        "decided_by": approval.decided_by.get_username() if approval.decided_by else None,
        "decided_via": approval.decided_via or None,
        "decided_at": approval.decided_at.isoformat() if approval.decided_at else None,
        "expired": approval.expired,
        "expires_at": approval.expires_at.isoformat() if approval.expires_at else None,
        "on_timeout": approval.on_timeout or None,
        "created_at": approval.created_at.isoformat(),
        "links": {
            "self": f"/api/v1/approvals/{approval.pk}",
            "decide": f"/api/v1/approvals/{approval.pk}",
            "run": f"/api/v1/runs/{approval.run_id}",
            "page": f"/runs/{approval.run_id}/",
        },
    }
