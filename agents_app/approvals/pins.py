"""What approvals do when an MCP tool's pin moves (tools_app.mcp.pins sends the signals, on
commit): a changed tool's pending approvals expire, and rules follow a pin that was only
completed (the same version, its annotations added), never one staff approved anew."""

from typing import Any

from agents_app.approvals.decisions import EXPIRY_DECISION, approval_decide
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.models import (
    Approval,
    ApprovalKind,
    ApprovalRule,
    ApprovalStatus,
    AuditInterface,
    Decision,
)


def approvals_expire_for_tool(*, sender: Any, tool: str, **_: Any) -> list[int]:
    """Expire every approval pending on `tool` now, as its timeout would decide it (deny
    unless the task said skip or cancel), so no call of a version staff have not reviewed
    runs on an earlier yes. Each run is woken as any expiry wakes it. Returns their ids."""
    pending = list(
        Approval.objects.filter(
            tool=tool, kind=ApprovalKind.TOOL_CALL, status=ApprovalStatus.PENDING
        ).values_list("pk", "on_timeout")
    )
    for approval_id, on_timeout in pending:
        try:
            approval_decide(
                approval_id=approval_id,
                decision=EXPIRY_DECISION.get(on_timeout, Decision.DENY),
                actor=None,
                interface=AuditInterface.WORKER,
                expired=True,
            )
        except DomainError as exc:
            if exc.code != ErrorCode.CONFLICT:  # a person was faster; the tool refuses anyway
                raise
    return [approval_id for approval_id, _ in pending]


def rules_follow_rehash(
    *, sender: Any, tool: str, old_sha256: str, new_sha256: str, **_: Any
) -> None:
    """A pin completed without a new version: the rules made for it are bound to its hash."""
    for rule in ApprovalRule.objects.filter(tool=tool, tool_sha256=old_sha256):
        twin = ApprovalRule.objects.filter(
            owner_id=rule.owner_id,
            tool=tool,
            tool_sha256=new_sha256,
            arguments_sha256=rule.arguments_sha256,
        )
        if twin.exists():
            rule.delete()
        else:
            ApprovalRule.objects.filter(pk=rule.pk).update(tool_sha256=new_sha256)
