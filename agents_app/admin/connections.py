"""Staff manage LLM connections: the key as a ${VAR} reference, health at a glance, Check now."""

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from agents_app.connections.health import connection_check
from agents_app.connections.services import connection_ensure_default
from agents_app.models import ConnectionStatus, LLMConnection
from tools_app.admin import health_badge, health_problem

STATUS_COLORS = {
    ConnectionStatus.UNCHECKED: "#57606a",  # neutral: nothing is known yet, nothing failed
    ConnectionStatus.OK: "#1a7f37",
    ConnectionStatus.BROKEN: "#cf222e",
}
# The seeded connection follows the LLM_* settings: these are theirs, not the admin's.
SEEDED_FIELDS = ["name", "base_url", "model", "api_key"]


class LLMConnectionForm(forms.ModelForm):
    class Meta:
        model = LLMConnection
        fields = ["name", "base_url", "model", "api_key", "context_window", "enabled", "is_default"]
        widgets = {
            # A reference is no secret; shown as typed so staff see which variable it reads.
            "api_key": forms.TextInput(attrs={"placeholder": "${OPENAI_API_KEY}", "size": 40}),
            "base_url": forms.TextInput(attrs={"size": 60}),
        }


@admin.register(LLMConnection)
class LLMConnectionAdmin(admin.ModelAdmin):
    form = LLMConnectionForm
    list_display = [
        "name",
        "model",
        "is_default",
        "enabled",
        "status_badge",
        "problem",
        "last_checked_at",
    ]
    list_filter = ["status", "enabled"]
    search_fields = ["name", "model", "base_url"]
    readonly_fields = [
        "seeded",
        "status_badge",
        "last_error",
        "last_checked_at",
        "capability_notes",
        "updated_at",
    ]
    fieldsets = [
        (None, {"fields": ["name", "seeded", "enabled", "is_default"]}),
        ("Server", {"fields": ["base_url", "model", "api_key", "context_window"]}),
        (
            "Health",
            {
                "fields": [
                    "status_badge",
                    "last_error",
                    "last_checked_at",
                    "capability_notes",
                    "updated_at",
                ]
            },
        ),
    ]
    actions = ["check_now"]

    def get_queryset(self, request: HttpRequest):
        connection_ensure_default()  # staff see the seeded one as the LLM_* settings are now
        return super().get_queryset(request)

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        # A connection being added has no health to show: it is checked once it is saved.
        return fieldsets if obj else [f for f in fieldsets if f[0] != "Health"]

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and obj.seeded:
            return [*SEEDED_FIELDS, *self.readonly_fields]
        return self.readonly_fields

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: LLMConnection) -> str:
        return health_badge(obj, "llm-status", STATUS_COLORS)

    @admin.display(description="last error")
    def problem(self, obj: LLMConnection) -> str:
        return health_problem(obj, ConnectionStatus.BROKEN)

    @admin.display(description="what the endpoint accepts")
    def capability_notes(self, obj: LLMConnection) -> str:
        if not obj.capabilities:
            return "Nothing learnt yet: a worker records it after its first call."
        return format_html(
            "<ul>{}</ul>",
            format_html_join("", "<li>{}: {}</li>", sorted(obj.capabilities.items())),
        )

    @admin.action(description="Check now", permissions=["change"])
    def check_now(self, request: HttpRequest, queryset) -> None:
        for connection in queryset:
            outcome = connection_check(connection)
            level = messages.SUCCESS if outcome.ok else messages.ERROR
            self.message_user(request, f"{outcome.name}: {outcome.message}", level)
