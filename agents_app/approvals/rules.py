"""What a person tells AgentDesk to remember: approval rules (a tool, or one exact call, needs
no more asking) and YOLO mode. Each change is audited."""

from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from agents_app.approvals.patterns import pattern_error
from agents_app.approvals.policy import YOLO_PERMISSION
from agents_app.core.audit import (
    APPROVAL_RULE_CREATE,
    APPROVAL_RULE_REVOKE,
    YOLO_DISABLE,
    YOLO_ENABLE,
    YOLO_GRANT,
    YOLO_REVOKE,
    arguments_sha256,
    audit_record,
)
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.models import (
    ApprovalRule,
    UserPreferences,
)
from tools_app.mcp.pins import tool_pinned_sha256


@transaction.atomic
def rule_create(
    *,
    owner_id: int,
    tool: str,
    arguments: Any,
    actor: Any,
    interface: str,
    pattern_kind: str = "",
    pattern: str = "",
) -> ApprovalRule:
    """Allow every call of `tool` (arguments None), one exact call, or the calls that fit an
    argument pattern (`pattern_kind` host | path_prefix | command, approvals.patterns), which
    also lets through a call whose arguments came from a tool's output. Idempotent: an
    existing rule is returned. Raises VALIDATION_ERROR for an empty tool, non-object
    arguments, arguments with a pattern, or a pattern that cannot be one."""
    if not isinstance(tool, str) or not tool.strip() or len(tool) > 200:
        raise DomainError(ErrorCode.VALIDATION_ERROR, "A rule names a tool", {"field": "tool"})
    if arguments is not None and not isinstance(arguments, dict):
        raise DomainError(
            ErrorCode.VALIDATION_ERROR, "`arguments` must be a JSON object", {"field": "arguments"}
        )
    if pattern_kind or pattern:
        if arguments is not None:
            raise DomainError(
                ErrorCode.VALIDATION_ERROR,
                "A rule is an exact call or a pattern, not both",
                {"field": "arguments"},
            )
        problem = pattern_error(pattern_kind, pattern)
        if problem:
            raise DomainError(ErrorCode.VALIDATION_ERROR, problem, {"field": "pattern"})
        pattern = pattern.strip()
    digest = arguments_sha256(arguments) if arguments is not None else ""
    # Bound to the version of the tool a person saw (an MCP tool's pin): a tool its server
    # changed since is another tool, which no rule made for this one lets through.
    version = tool_pinned_sha256(tool) or ""
    existing = ApprovalRule.objects.filter(
        owner_id=owner_id,
        tool=tool,
        tool_sha256=version,
        arguments_sha256=digest,
        pattern_kind=pattern_kind,
        pattern=pattern,
    )
    if existing.exists():
        return existing.get()
    try:
        with transaction.atomic():
            rule = ApprovalRule.objects.create(
                owner_id=owner_id,
                tool=tool,
                tool_sha256=version,
                arguments_sha256=digest,
                arguments=arguments,
                pattern_kind=pattern_kind,
                pattern=pattern,
                created_via=interface,
            )
    except IntegrityError:  # the same rule, created at the same moment
        return existing.get()
    audit_record(
        action=APPROVAL_RULE_CREATE,
        interface=interface,
        actor=actor,
        target=tool,
        details={
            "rule_id": rule.pk,
            "exact": bool(digest),
            "arguments_sha256": digest,
            "tool_sha256": version,
            "pattern_kind": pattern_kind,
            "pattern": pattern,
        },
    )
    return rule


@transaction.atomic
def rule_revoke(*, rule: ApprovalRule, actor: Any, interface: str) -> None:
    """Delete the rule; its calls ask again from the next one on. Audited."""
    audit_record(
        action=APPROVAL_RULE_REVOKE,
        interface=interface,
        actor=actor,
        target=rule.tool,
        details={
            "rule_id": rule.pk,
            "exact": rule.is_exact,
            "arguments_sha256": rule.arguments_sha256,
        },
    )
    rule.delete()


@transaction.atomic
def yolo_set(*, user: Any, on: bool, interface: str) -> UserPreferences:
    """The user turns YOLO mode on or off. Turning it on needs the staff-granted permission:
    FORBIDDEN otherwise."""
    if on and not user.has_perm(YOLO_PERMISSION):
        raise DomainError(
            ErrorCode.FORBIDDEN,
            "YOLO mode needs a permission only staff can grant",
            {"permission": YOLO_PERMISSION},
        )
    prefs, _ = UserPreferences.objects.select_for_update().get_or_create(user=user)
    if prefs.yolo != on:
        prefs.yolo = on
        prefs.changed_at = timezone.now()
        prefs.save()
        audit_record(
            action=YOLO_ENABLE if on else YOLO_DISABLE,
            interface=interface,
            actor=user,
            target=user.get_username(),
        )
    return prefs


@transaction.atomic
def yolo_grant(*, user: Any, granted: bool, actor: Any, interface: str) -> None:
    """Staff grant or revoke the permission to use YOLO mode (revoking also turns it off)."""
    from django.contrib.auth.models import Permission

    app_label, codename = YOLO_PERMISSION.split(".")
    permission = Permission.objects.get(content_type__app_label=app_label, codename=codename)
    if granted:
        user.user_permissions.add(permission)
    else:
        user.user_permissions.remove(permission)
        UserPreferences.objects.filter(user=user).update(yolo=False, changed_at=timezone.now())
    audit_record(
        action=YOLO_GRANT if granted else YOLO_REVOKE,
        interface=interface,
        actor=actor,
        target=user.get_username(),
    )
