"""Reads of approvals and rules, scoped to the user who asks."""

from typing import Any

from django.db.models import QuerySet

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.models import (
    Approval,
    ApprovalRule,
    ApprovalStatus,
    Run,
)


def approvals_for(user: Any) -> QuerySet[Approval]:
    """The approvals of the user's runs, newest first, with what the pages show of each."""
    return Approval.objects.filter(owner=user).select_related("run__task", "step", "decided_by")


def approval_get(*, user: Any, approval_id: int) -> Approval:
    """An approval `user` may see and decide (theirs, or any as staff); anyone else hears
    NOT_FOUND, never that it exists."""
    approval = (
        Approval.objects.select_related("run__task", "step", "decided_by")
        .filter(pk=approval_id)
        .first()
    )
    if approval is None or not approval.decidable_by(user):
        raise DomainError(ErrorCode.NOT_FOUND, f"Approval {approval_id} not found")
    return approval


def approval_pending_for_run(run: Run) -> Approval | None:
    """The approval a parked run waits for (a run waits for one at a time)."""
    return (
        Approval.objects.filter(run=run, status=ApprovalStatus.PENDING)
        .select_related("run__task", "step")
        .order_by("-created_at", "-id")
        .first()
    )


def approval_rules_for(user: Any) -> QuerySet[ApprovalRule]:
    return ApprovalRule.objects.filter(owner=user).order_by("tool", "-created_at")
