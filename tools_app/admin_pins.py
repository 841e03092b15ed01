"""The admin's review of changed MCP tools (issue 35, tools_app.mcp.pins): a badge and a filter
on the tool list, and a page per tool that shows what its server offers now against the pinned
version, with the one button that approves it. Staff with the right to change tools only."""

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from agents_app.core.audit import AuditInterface
from agents_app.core.errors import DomainError
from tools_app.mcp.pins import pin_diff, tool_pin_approve
from tools_app.models import PinStatus, Tool, ToolSource

PIN_COLORS = {PinStatus.PINNED: "#1a7f37", PinStatus.CHANGED: "#cf222e"}


class PinReviewAdmin(admin.ModelAdmin):
    """Mixed into ToolAdmin: the pin's badge, filter and review page."""

    def get_urls(self):
        info = self.opts.app_label, self.opts.model_name
        return [
            path(
                "<path:object_id>/review/",
                self.admin_site.admin_view(self.review_view),
                name="{}_{}_review".format(*info),
            ),
            *super().get_urls(),
        ]

    @admin.display(description="pin", ordering="pin_status")
    def pin_badge(self, obj: Tool) -> str:
        if obj.source != ToolSource.MCP:
            return "—"
        badge = format_html(
            '<span class="tool-pin tool-pin-{}" title="{}" style="color: #fff; background: {}; '
            'border-radius: 4px; padding: 1px 6px">{}</span>',
            obj.pin_status,
            obj.pinned_sha256,
            PIN_COLORS.get(obj.pin_status, "#6e7781"),
            obj.get_pin_status_display(),
        )
        if not obj.needs_review:
            return badge
        url = reverse("admin:tools_app_tool_review", args=[obj.pk])
        return format_html('{} <a href="{}" class="tool-pin-review">Review</a>', badge, url)

    def review_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """GET: the diff of the version the server offers now against the pin. POST: approve
        it (the form names the version it showed, so a newer one is never approved blind)."""
        tool = self.get_object(request, object_id)
        if tool is None or tool.source != ToolSource.MCP:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if not self.has_change_permission(request, tool):
            raise PermissionDenied
        if request.method == "POST":
            return self._approve(request, tool)
        context: dict[str, Any] = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Review {tool.name}",
            "tool": tool,
            "diffs": [
                {**diff, "table": mark_safe(diff["table"])}  # noqa: S308  difflib escapes it
                for diff in pin_diff(tool)
            ]
            if tool.needs_review
            else [],
        }
        return TemplateResponse(request, "admin/tools_app/tool/review.html", context)

    def _approve(self, request: HttpRequest, tool: Tool) -> HttpResponse:
        try:
            approved = tool_pin_approve(
                tool_id=tool.pk,
                expected_sha256=request.POST.get("pending_sha256", ""),
                actor=request.user,
                interface=AuditInterface.ADMIN,
            )
        except DomainError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return redirect("admin:tools_app_tool_review", tool.pk)
        self.message_user(
            request,
            f"Approved the new version of {approved.name}: it is offered to agents again. "
            "Rules made for the earlier version no longer let its calls through.",
            messages.SUCCESS,
        )
        return redirect("admin:tools_app_tool_change", tool.pk)
