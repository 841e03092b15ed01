"""Approvals in the admin: staff see what waits and decide it, revoke rules, grant YOLO mode.

Nothing here writes a row itself: every act goes through agents_app.approvals.decisions, so it is
audited with interface `admin` and the staff member as actor, like the same act from the pages
or the API, and two deciders (or a decider and a timeout) still cannot both win.
"""

import json
from typing import Any

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.db.models import Exists, OuterRef, Q
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from agents_app.approvals.decisions import approvals_decide_many
from agents_app.approvals.policy import YOLO_PERMISSION
from agents_app.approvals.rules import rule_revoke, yolo_grant
from agents_app.core.errors import ErrorCode
from agents_app.models import Approval, ApprovalRule, AuditInterface, Decision, UserPreferences

User = get_user_model()

DECIDED = {
    Decision.APPROVE: "Approved",
    Decision.DENY: "Denied",
    Decision.SKIP: "Skipped the steps of",
    Decision.CANCEL: "Cancelled the runs of",
}


def json_block(value: Any) -> str:
    return format_html(
        '<pre style="white-space: pre-wrap; margin: 0">{}</pre>',
        json.dumps(value, indent=2, ensure_ascii=False),
    )


def numbers(ids: list[Any]) -> str:
    return ", ".join(f"#{i}" for i in ids)


@admin.register(Approval)
class ApprovalAdmin(admin.ModelAdmin):
    """Read-only rows; the actions decide through the same service as the pages and the API."""

    list_display = [
        "id",
        "run_link",
        "owner",
        "subject",
        "risk",
        "level",
        "status",
        "created_at",
        "expires_at",
        "decided",
    ]
    list_filter = ["status", "kind", "risk", "level", "decided_via"]
    search_fields = ["tool", "owner__username"]
    search_help_text = "Tool name or the owner's username."
    list_select_related = ["owner", "decided_by"]
    fields = [
        "run_link",
        "owner",
        "kind",
        "tool",
        "arguments_block",
        "risk",
        "level",
        "reason",
        "reasoning",
        "status",
        "decided",
        "decided_at",
        "decision_arguments_block",
        "remember",
        "expires_at",
        "on_timeout",
        "created_at",
    ]
    readonly_fields = fields
    actions = ["approve_selected", "deny_selected", "skip_selected", "cancel_selected"]

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_decide_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("agents_app.change_approval")

    @admin.display(description="run", ordering="run_id")
    def run_link(self, obj: Approval) -> str:
        url = reverse("admin:agents_app_run_change", args=[obj.run_id])
        return format_html('<a href="{}">{}</a>', url, obj.run_id)

    @admin.display(description="tool / kind", ordering="tool")
    def subject(self, obj: Approval) -> str:
        return obj.tool or obj.get_kind_display()

    @admin.display(description="decided by (via)")
    def decided(self, obj: Approval) -> str:
        if not obj.decided_via:
            return "—"
        who = obj.decided_by.get_username() if obj.decided_by else "its timeout"
        return f"{who} ({obj.decided_via})"

    @admin.display(description="arguments")
    def arguments_block(self, obj: Approval) -> str:
        return json_block(obj.arguments)

    @admin.display(description="edited arguments")
    def decision_arguments_block(self, obj: Approval) -> str:
        return "—" if obj.decision_arguments is None else json_block(obj.decision_arguments)

    def _decide(self, request: HttpRequest, queryset, decision: str) -> None:
        decided, refused = approvals_decide_many(
            approval_ids=list(queryset.order_by("pk").values_list("pk", flat=True)),
            decision=decision,
            actor=request.user,
            interface=AuditInterface.ADMIN,
        )
        if decided:
            self.message_user(
                request,
                f"{DECIDED[decision]} {len(decided)} approval(s): "
                f"{numbers([a.pk for a in decided])}.",
                messages.SUCCESS,
            )
        conflicts = [r for r in refused if r["code"] == ErrorCode.CONFLICT]
        if conflicts:
            self.message_user(
                request,
                f"Left alone, already decided: {'; '.join(r['message'] for r in conflicts)}.",
                messages.WARNING,
            )
        for other in (r for r in refused if r["code"] != ErrorCode.CONFLICT):
            self.message_user(request, f"#{other['id']}: {other['message']}", messages.ERROR)

    @admin.action(description="Approve selected", permissions=["decide"])
    def approve_selected(self, request: HttpRequest, queryset) -> None:
        self._decide(request, queryset, Decision.APPROVE)

    @admin.action(description="Deny selected", permissions=["decide"])
    def deny_selected(self, request: HttpRequest, queryset) -> None:
        self._decide(request, queryset, Decision.DENY)

    @admin.action(description="Skip selected", permissions=["decide"])
    def skip_selected(self, request: HttpRequest, queryset) -> None:
        self._decide(request, queryset, Decision.SKIP)

    @admin.action(description="Cancel the runs of selected", permissions=["decide"])
    def cancel_selected(self, request: HttpRequest, queryset) -> None:
        self._decide(request, queryset, Decision.CANCEL)


@admin.register(ApprovalRule)
class ApprovalRuleAdmin(admin.ModelAdmin):
    """Rules are made by people deciding; staff may only revoke them, and every revoke (one
    from the change page or many from the action) goes through the audited service."""

    list_display = ["id", "owner", "tool", "scope", "created_via", "created_at"]
    list_filter = ["created_via", "created_at"]
    search_fields = ["tool", "owner__username"]
    list_select_related = ["owner"]
    fields = ["owner", "tool", "scope", "arguments_sha256", "arguments_block", "created_via"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="scope")
    def scope(self, obj: ApprovalRule) -> str:
        return obj.scope

    @admin.display(description="arguments")
    def arguments_block(self, obj: ApprovalRule) -> str:
        return "any" if obj.arguments is None else json_block(obj.arguments)

    def delete_model(self, request: HttpRequest, obj: ApprovalRule) -> None:
        rule_revoke(rule=obj, actor=request.user, interface=AuditInterface.ADMIN)

    def delete_queryset(self, request: HttpRequest, queryset) -> None:
        for rule in queryset:
            rule_revoke(rule=rule, actor=request.user, interface=AuditInterface.ADMIN)


# YOLO mode is a permission on the user (a preferences row may not exist yet), so its actions
# live on the user admin rather than on UserPreferences.
admin.site.unregister(User)


@admin.register(User)
class AgentDeskUserAdmin(UserAdmin):
    list_display = [*UserAdmin.list_display, "yolo_allowed", "yolo_on"]
    actions = ["grant_yolo", "revoke_yolo"]

    def get_queryset(self, request):
        app_label, codename = YOLO_PERMISSION.split(".")
        direct = Q(
            user_permissions__codename=codename,
            user_permissions__content_type__app_label=app_label,
        )
        by_group = Q(
            groups__permissions__codename=codename,
            groups__permissions__content_type__app_label=app_label,
        )
        holders = User.objects.filter(pk=OuterRef("pk")).filter(direct | by_group)
        switched_on = UserPreferences.objects.filter(user=OuterRef("pk"), yolo=True)
        return (
            super()
            .get_queryset(request)
            .annotate(yolo_granted=Exists(holders), yolo_switched_on=Exists(switched_on))
        )

    @admin.display(description="YOLO allowed", boolean=True)
    def yolo_allowed(self, obj) -> bool:
        """What `has_perm` would answer: superusers hold every permission, inactive users none."""
        return obj.is_active and (obj.is_superuser or obj.yolo_granted)

    @admin.display(description="YOLO on", boolean=True, ordering="yolo_switched_on")
    def yolo_on(self, obj) -> bool:
        return obj.yolo_switched_on

    @admin.action(description="Grant YOLO mode", permissions=["change"])
    def grant_yolo(self, request: HttpRequest, queryset) -> None:
        names = []
        for user in queryset:
            yolo_grant(user=user, granted=True, actor=request.user, interface=AuditInterface.ADMIN)
            names.append(user.get_username())
        self.message_user(
            request,
            f"Granted YOLO mode to {', '.join(names)}; each turns it on for themselves.",
            messages.SUCCESS,
        )

    @admin.action(description="Revoke YOLO mode", permissions=["change"])
    def revoke_yolo(self, request: HttpRequest, queryset) -> None:
        names, still = [], []
        for user in queryset:
            yolo_grant(user=user, granted=False, actor=request.user, interface=AuditInterface.ADMIN)
            names.append(user.get_username())
            # A fresh row: has_perm caches what the user held before the revoke.
            if User.objects.get(pk=user.pk).has_perm(YOLO_PERMISSION):
                still.append(user.get_username())
        self.message_user(
            request,
            f"Revoked YOLO mode from {', '.join(names)} and turned it off.",
            messages.SUCCESS,
        )
        if still:
            self.message_user(
                request,
                f"Still allowed as superusers or through a group: {', '.join(still)}.",
                messages.WARNING,
            )
