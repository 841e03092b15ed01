"""Staff manage MCP servers and tools here: health at a glance, mcp_config.json in and out."""

import json
import logging
import re
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import models, transaction
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path
from django.utils import timezone
from django.utils.html import format_html

from agents_app.core.audit import (
    MCP_SERVER_DISABLE,
    MCP_SERVER_ENABLE,
    MCP_SERVER_IMPORT,
    AuditInterface,
    audit_record,
)
from tools_app.admin_pins import PinReviewAdmin
from tools_app.mcp.checks import servers_check
from tools_app.mcp.config import (
    ImportResult,
    MCPConfigError,
    dump_mcp_config,
    export_mcp_config,
    import_mcp_config,
    load_mcp_config,
)
from tools_app.mcp.store import notify as notify_pages
from tools_app.models import CAPABILITY_NAME, CapabilityOrigin, MCPServer, ServerStatus, Tool

logger = logging.getLogger(__name__)

CONFIG_UPLOAD_MAX_BYTES = 1_000_000
STATUS_COLORS = {
    ServerStatus.UNCHECKED: "#57606a",  # neutral: nothing is known yet, nothing failed
    ServerStatus.ACTIVE: "#1a7f37",
    ServerStatus.BROKEN: "#cf222e",
    ServerStatus.DISABLED: "#6e7781",
}
# Edits of these make a tool's description of itself the staff's; discovery leaves it alone.
STAFF_OWNED_FIELDS = frozenset({"capabilities", "domain", "side_effects"})


def config_download(servers) -> HttpResponse:
    response = HttpResponse(
        dump_mcp_config(export_mcp_config(servers)), content_type="application/json"
    )
    response["Content-Disposition"] = 'attachment; filename="mcp_config.json"'
    return response


def check_level(outcome) -> int:
    if outcome.ok:
        return messages.SUCCESS
    return messages.WARNING if outcome.status == ServerStatus.DISABLED else messages.ERROR


def health_badge(obj: Any, css: str, colors: dict[str, str]) -> str:
    """The coloured status badge of something with a health check (an MCP server, an LLM
    connection), its last error as the tooltip; none for an unsaved row, never checked."""
    if obj.pk is None:
        return ""
    return format_html(
        '<span class="{} {}-{}" title="{}" style="color: #fff; '
        'background: {}; border-radius: 4px; padding: 1px 6px">{}</span>',
        css,
        css,
        obj.status,
        obj.last_error,
        colors.get(obj.status, "#6e7781"),
        obj.get_status_display(),
    )


def health_problem(obj: Any, broken: str) -> str:
    """Its last error, cut to 100 characters, while it is `broken`."""
    if obj.status != broken:
        return ""
    return obj.last_error if len(obj.last_error) <= 100 else obj.last_error[:99] + "…"


def preformatted(text: str) -> str:
    if not text:
        return "—"
    return format_html(
        '<pre style="white-space: pre-wrap; max-height: 24em; overflow: auto; margin: 0">{}</pre>',
        text,
    )


def audit_servers(request: HttpRequest, action: str, details: dict[str, dict]) -> None:
    """One admin AuditEvent per server name in `details`, in the caller's transaction."""
    for name, server_details in details.items():
        audit_record(
            action=action,
            interface=AuditInterface.ADMIN,
            actor=request.user,
            target=name,
            details=server_details,
        )


def import_changes(result: ImportResult, file_name: str) -> dict[str, dict]:
    return {
        name: {"file": file_name, "change": change}
        for change, names in (
            ("created", result.created),
            ("updated", result.updated),
            ("unchanged", result.unchanged),
        )
        for name in names
    }


INHERIT_CHOICE = ("", "inherit")


def with_inherit_choice(formfield):
    formfield.choices = [INHERIT_CHOICE, *[c for c in formfield.choices if c[0]]]
    return formfield


class ToolInline(admin.TabularInline):
    model = Tool
    extra = 0
    fields = ["name", "enabled", "approval_level", "capability_list", "domain", "side_effects"]
    readonly_fields = ["name", "capability_list", "domain", "side_effects"]
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False  # a server's tools are what it offers, found by checking it

    def formfield_for_choice_field(self, db_field, request, **kwargs):
        formfield = super().formfield_for_choice_field(db_field, request, **kwargs)
        return with_inherit_choice(formfield) if db_field.name == "approval_level" else formfield

    @admin.display(description="capabilities")
    def capability_list(self, obj: Tool) -> str:
        return ", ".join(obj.capabilities)


class ImportForm(forms.Form):
    file = forms.FileField(
        label="mcp_config.json", help_text='A JSON file {"mcpServers": {"<name>": {...}}}.'
    )

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > CONFIG_UPLOAD_MAX_BYTES:
            raise ValidationError(f"The file is over {CONFIG_UPLOAD_MAX_BYTES} bytes.")
        return upload


@admin.register(MCPServer)
class MCPServerAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "transport",
        "enabled",
        "status_badge",
        "problem",
        "tool_count",
        "last_checked_at",
    ]
    list_filter = ["status", "transport", "enabled"]
    search_fields = ["name", "command", "url"]
    readonly_fields = [
        "status_badge",
        "last_error",
        "stderr_block",
        "last_checked_at",
        "tool_count",
        "updated_at",
    ]
    fieldsets = [
        (None, {"fields": ["name", "transport", "enabled"]}),
        (
            "Health",
            {
                "fields": [
                    "status_badge",
                    "last_error",
                    "stderr_block",
                    "last_checked_at",
                    "tool_count",
                    "updated_at",
                ]
            },
        ),
        ("Calls", {"fields": ["call_timeout", "default_approval_level"]}),
        (
            "Local process (stdio)",
            {"fields": ["command", "args", "cwd", "env"], "classes": ["transport-stdio"]},
        ),
        (
            "Remote server (Streamable HTTP, SSE)",
            {"fields": ["url", "headers"], "classes": ["transport-http"]},
        ),
    ]
    formfield_overrides = {
        models.JSONField: {"widget": forms.Textarea(attrs={"rows": 4, "cols": 80})},
    }
    inlines = [ToolInline]
    actions = ["check_now", "enable", "disable", "export_selected"]

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        # A server being added has no health to show: it is checked once it is saved.
        return fieldsets if obj else [f for f in fieldsets if f[0] != "Health"]

    def get_readonly_fields(self, request, obj=None):
        # Renaming would rename every tool agents and plans know as `<server>.<tool>`.
        return [*self.readonly_fields, "name"] if obj else self.readonly_fields

    def get_urls(self):
        info = self.opts.app_label, self.opts.model_name
        return [
            path(
                "import/",
                self.admin_site.admin_view(self.import_view),
                name="{}_{}_import".format(*info),
            ),
            path(
                "export/",
                self.admin_site.admin_view(self.export_view),
                name="{}_{}_export".format(*info),
            ),
            path(
                "<path:object_id>/check/",
                self.admin_site.admin_view(self.check_view),
                name="{}_{}_check".format(*info),
            ),
            *super().get_urls(),
        ]

    def changelist_view(self, request, extra_context=None):
        extra_context = {**(extra_context or {}), "can_import": self.can_import(request)}
        return super().changelist_view(request, extra_context)

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: MCPServer) -> str:
        return health_badge(obj, "mcp-status", STATUS_COLORS)

    @admin.display(description="last error")
    def problem(self, obj: MCPServer) -> str:
        return health_problem(obj, ServerStatus.BROKEN)

    @admin.display(description="last lines of stderr")
    def stderr_block(self, obj: MCPServer) -> str:
        return preformatted(obj.stderr_tail)

    @admin.action(description="Check now", permissions=["change"])
    def check_now(self, request: HttpRequest, queryset) -> None:
        ids = list(queryset.values_list("pk", flat=True))
        for outcome in servers_check(server_ids=ids, actor=request.user):
            self.message_user(request, f"{outcome.name}: {outcome.summary()}", check_level(outcome))

    def check_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The "Check now" button of one server's page: check it, come back with the result."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        server = self.get_object(request, object_id)
        if server is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if not self.has_change_permission(request, server):
            raise PermissionDenied
        [outcome] = servers_check(server_ids=[server.pk], actor=request.user)
        self.message_user(request, outcome.summary(), check_level(outcome))
        return redirect("admin:tools_app_mcpserver_change", server.pk)

    @admin.action(description="Enable", permissions=["change"])
    def enable(self, request: HttpRequest, queryset) -> None:
        with transaction.atomic():
            before = dict(queryset.select_for_update().values_list("name", "enabled"))
            count = queryset.enable()
            changed = {name: {"changed": not enabled} for name, enabled in before.items()}
            audit_servers(request, MCP_SERVER_ENABLE, changed)
        notify_pages()
        self.message_user(
            request, f"Enabled {count} server(s); each is connected at the workers' next poll."
        )

    @admin.action(description="Disable", permissions=["change"])
    def disable(self, request: HttpRequest, queryset) -> None:
        with transaction.atomic():
            before = dict(queryset.select_for_update().values_list("name", "enabled"))
            count = queryset.disable()
            changed = {name: {"changed": enabled} for name, enabled in before.items()}
            audit_servers(request, MCP_SERVER_DISABLE, changed)
        notify_pages()
        self.message_user(request, f"Disabled {count} server(s); agents no longer see their tools.")

    @admin.action(description="Export mcp_config.json", permissions=["view"])
    def export_selected(self, request: HttpRequest, queryset) -> HttpResponse:
        return config_download(queryset)

    def can_import(self, request: HttpRequest) -> bool:
        return self.has_add_permission(request) and self.has_change_permission(request)

    def export_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        return config_download(MCPServer.objects.all())

    def import_view(self, request: HttpRequest) -> HttpResponse:
        if not self.can_import(request):
            raise PermissionDenied
        form = ImportForm(request.POST or None, request.FILES or None)
        errors: list[str] = []
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                with transaction.atomic():
                    result = import_mcp_config(load_mcp_config(upload.read(), source=upload.name))
                    audit_servers(request, MCP_SERVER_IMPORT, import_changes(result, upload.name))
            except MCPConfigError as exc:
                errors = exc.errors
            else:
                self.message_user(
                    request, f"Imported {upload.name}: {result.summary()}.", messages.SUCCESS
                )
                for warning in result.warnings:
                    self.message_user(request, warning, messages.WARNING)
                if result.created or result.updated:
                    self.message_user(request, "Use “Check now” to connect the new settings.")
                return redirect("admin:tools_app_mcpserver_changelist")
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Import mcp_config.json",
            "form": form,
            "errors": errors,
        }
        return TemplateResponse(request, "admin/tools_app/mcpserver/import.html", context)


class ToolForm(forms.ModelForm):
    capabilities = forms.CharField(
        required=False,
        help_text="Comma-separated upper-case names, e.g. FILE_READ, SEARCH. Editing capabilities, "
        "domain or side effects keeps them as you set them when the server is checked again.",
    )

    class Meta:
        model = Tool
        fields = ["enabled", "approval_level", "waits", "capabilities", "domain", "side_effects"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        with_inherit_choice(self.fields["approval_level"])
        if self.instance.pk:
            self.initial["capabilities"] = ", ".join(self.instance.capabilities)

    def clean_capabilities(self) -> list[str]:
        names = [n.upper() for n in re.split(r"[,\s]+", self.cleaned_data["capabilities"]) if n]
        bad = [n for n in names if not CAPABILITY_NAME.match(n)]
        if bad:
            raise ValidationError(
                f"Not a capability name: {', '.join(bad)}. Use letters, digits and _, e.g. "
                "FILE_READ."
            )
        return sorted(set(names))


@admin.register(Tool)
class ToolAdmin(PinReviewAdmin):
    form = ToolForm
    list_display = [
        "name",
        "source",
        "server",
        "pin_badge",
        "enabled",
        "effective_approval",
        "capability_list",
        "domain",
    ]
    list_filter = [
        "pin_status",
        "source",
        "enabled",
        "waits",
        "server",
        "approval_level",
        "domain",
        "capabilities_origin",
    ]
    list_select_related = ["server"]
    search_fields = ["name", "description"]
    readonly_fields = [
        "name",
        "source",
        "server",
        "description",
        "effective_approval",
        "capabilities_origin",
        "schema_block",
        "pin_badge",
        "pinned_sha256",
        "annotations",
        "updated_at",
    ]
    fieldsets = [
        (None, {"fields": ["name", "source", "server", "description"]}),
        ("Pinned version", {"fields": ["pin_badge", "pinned_sha256", "annotations"]}),
        ("For agents", {"fields": ["enabled", "approval_level", "effective_approval", "waits"]}),
        (
            "Capabilities (seed 000 discovery)",
            {"fields": ["capabilities", "domain", "side_effects", "capabilities_origin"]},
        ),
        ("Input schema", {"fields": ["schema_block", "updated_at"]}),
    ]
    actions = ["enable", "disable", "restore_discovered"]

    def has_add_permission(self, request, obj=None):
        return False  # tools are discovered on their servers or registered by the code

    def has_delete_permission(self, request, obj=None):
        return False  # it would come back at the next check; disable it instead

    def save_model(self, request, obj: Tool, form, change) -> None:
        if STAFF_OWNED_FIELDS & set(form.changed_data):
            obj.capabilities_origin = CapabilityOrigin.STAFF
        super().save_model(request, obj, form, change)

    @admin.display(description="effective approval level", ordering="approval_level")
    def effective_approval(self, obj: Tool) -> str:
        return obj.effective_approval_level + ("" if obj.approval_level else " (inherited)")

    @admin.display(description="capabilities")
    def capability_list(self, obj: Tool) -> str:
        return ", ".join(obj.capabilities)

    @admin.display(description="input schema")
    def schema_block(self, obj: Tool) -> str:
        return preformatted(json.dumps(obj.input_schema, indent=2, ensure_ascii=False))

    @admin.action(description="Enable", permissions=["change"])
    def enable(self, request: HttpRequest, queryset) -> None:
        count = queryset.filter(enabled=False).update(enabled=True, updated_at=timezone.now())
        self.message_user(request, f"Enabled {count} tool(s).")

    @admin.action(description="Disable", permissions=["change"])
    def disable(self, request: HttpRequest, queryset) -> None:
        count = queryset.filter(enabled=True).update(enabled=False, updated_at=timezone.now())
        self.message_user(request, f"Disabled {count} tool(s).")

    @admin.action(description="Let discovery set capabilities again", permissions=["change"])
    def restore_discovered(self, request: HttpRequest, queryset) -> None:
        count = queryset.filter(capabilities_origin=CapabilityOrigin.STAFF).update(
            capabilities_origin=CapabilityOrigin.INFERRED, updated_at=timezone.now()
        )
        self.message_user(
            request, f"{count} tool(s) take their capabilities from discovery at the next check."
        )
