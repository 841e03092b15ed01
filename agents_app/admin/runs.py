import json

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import PermissionDenied
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html

# Approvals, rules and YOLO mode register their own admins (the same site).
from agents_app.core.audit import export_lines, export_lines_async
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.models import (
    ApiKey,
    AuditEvent,
    AuditInterface,
    KillSwitch,
    Plan,
    Run,
    RunEvent,
    Step,
    Task,
    ToolCall,
    Webhook,
    WebhookDelivery,
)
from agents_app.runs.control import kill_switch_set
from agents_app.runs.services import run_cancel
from agents_app.webhooks.services import (
    webhook_deliveries_retry,
    webhook_events_check,
    webhook_url_check,
)

AUDIT_SUMMARY_CHARS = 120


class ReadOnlyAdmin(admin.ModelAdmin):
    """History is written by the engine only; staff read it here."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class CreatedByRunsAdmin(admin.ModelAdmin):
    """Rows that only submitting a task creates (its run, plans, steps, calls): staff may look
    and correct, but an "Add" form would make a row no run stands behind."""

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Task)
class TaskAdmin(CreatedByRunsAdmin):
    list_display = ["id", "owner", "short_text", "fast_path", "created_at"]
    list_filter = ["fast_path", "created_at"]
    search_fields = ["text", "owner__username"]
    raw_id_fields = ["owner"]

    @admin.display(description="text")
    def short_text(self, obj):
        return obj.text[:80]


class StepInline(admin.TabularInline):
    model = Step
    extra = 0
    fields = ["plan", "index", "objective", "status", "retry_count", "error"]
    readonly_fields = fields
    can_delete = False
    show_change_link = True


@admin.register(Run)
class RunAdmin(CreatedByRunsAdmin):
    list_display = ["id", "owner", "status", "attempt", "replans", "error_code", "created_at"]
    list_filter = ["status", "error_code", "created_at"]
    search_fields = ["task__text", "owner__username"]
    raw_id_fields = ["task", "owner"]
    readonly_fields = ["event_seq", "lease_owner", "lease_expires_at", "started_at", "finished_at"]
    inlines = [StepInline]
    actions = ["stop_selected"]

    @admin.action(description="Stop selected runs", permissions=["change"])
    def stop_selected(self, request: HttpRequest, queryset) -> None:
        asked, finished = 0, []
        for run in queryset:
            try:
                run_cancel(run=run, actor=request.user, interface=AuditInterface.ADMIN)
            except DomainError as error:
                if error.code != ErrorCode.CONFLICT:
                    raise
                finished.append(str(run.pk))
            else:
                asked += 1
        self.message_user(
            request, f"Asked {asked} run(s) to stop; queued ones stopped at once.", messages.SUCCESS
        )
        if finished:
            self.message_user(
                request, f"Already finished, left alone: {', '.join(finished)}.", messages.WARNING
            )


@admin.register(Plan)
class PlanAdmin(CreatedByRunsAdmin):
    list_display = ["id", "run", "version", "created_at"]
    raw_id_fields = ["run"]


@admin.register(Step)
class StepAdmin(CreatedByRunsAdmin):
    list_display = ["id", "run", "index", "status", "retry_count", "started_at", "finished_at"]
    list_filter = ["status"]
    raw_id_fields = ["run", "plan"]


@admin.register(ToolCall)
class ToolCallAdmin(CreatedByRunsAdmin):
    list_display = ["id", "run", "tool", "status", "duration_ms", "created_at"]
    list_filter = ["status", "tool"]
    raw_id_fields = ["run", "step"]


@admin.register(RunEvent)
class RunEventAdmin(ReadOnlyAdmin):
    list_display = ["run", "seq", "type", "created_at"]
    list_filter = ["type"]
    search_fields = ["run__id"]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "prefix", "created_at", "last_used_at", "revoked"]
    list_filter = ["revoked"]
    fields = ["user", "name", "prefix", "revoked", "created_at", "last_used_at"]
    readonly_fields = ["prefix", "created_at", "last_used_at"]
    autocomplete_fields = ["user"]  # a search by name, not a raw user id

    def save_model(self, request, obj, form, change):
        if not change:
            raw_key = ApiKey.generate()
            obj.set_key(raw_key)
            super().save_model(request, obj, form, change)
            self.message_user(
                request,
                f"API key for {obj.user}: {raw_key} — copy it now; it is stored hashed and "
                "cannot be shown again.",
                messages.WARNING,
            )
            return
        super().save_model(request, obj, form, change)


def jsonl_response(request: HttpRequest, queryset) -> StreamingHttpResponse:
    """Stream `queryset` as JSON lines. Under ASGI (daphne) the lines come from an async
    iterator: Django would read a sync one whole into memory before sending anything."""
    lines = (
        export_lines_async(queryset) if isinstance(request, ASGIRequest) else export_lines(queryset)
    )
    response = StreamingHttpResponse(lines, content_type="application/x-ndjson; charset=utf-8")
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    response["Content-Disposition"] = f'attachment; filename="audit-{stamp}.jsonl"'
    return response


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    """The audit log: read-only, filterable, exported as JSON lines (all matching rows with the
    changelist's button, the ticked ones with the action)."""

    list_display = [
        "created_at",
        "action",
        "interface",
        "actor_label",
        "run_number",
        "target",
        "summary",
    ]
    list_filter = ["interface", "action", "actor_label"]
    date_hierarchy = "created_at"
    search_fields = ["target", "actor_label"]
    search_help_text = "Tool, server or file name, actor, or a run id."
    fields = [
        "created_at",
        "action",
        "interface",
        "actor_label",
        "actor",
        "run",
        "run_number",
        "target",
        "details_block",
    ]
    readonly_fields = fields
    actions = ["export_selected"]

    def get_urls(self):
        info = self.opts.app_label, self.opts.model_name
        return [
            path(
                "export/",
                self.admin_site.admin_view(self.export_view),
                name="{}_{}_export".format(*info),
            ),
            *super().get_urls(),
        ]

    def get_search_results(self, request, queryset, search_term):
        # A run id as an integer lookup: the default text lookups would not match it, and an
        # "=run_id" search field would fail on any term that is not a number.
        found, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        term = search_term.strip()
        if term.isdigit():
            found |= queryset.filter(run_id=int(term))
        return found, may_have_duplicates

    @admin.display(description="run", ordering="run_id")
    def run_number(self, obj: AuditEvent) -> int | None:
        # The number, not the row: it stays meaningful after the run was deleted.
        return obj.run_id

    @admin.display(description="details")
    def summary(self, obj: AuditEvent) -> str:
        text = json.dumps(obj.details, ensure_ascii=False, sort_keys=True)
        return text if len(text) <= AUDIT_SUMMARY_CHARS else text[: AUDIT_SUMMARY_CHARS - 1] + "…"

    @admin.display(description="details")
    def details_block(self, obj: AuditEvent) -> str:
        return format_html(
            '<pre style="white-space: pre-wrap; margin: 0">{}</pre>',
            json.dumps(obj.details, indent=2, ensure_ascii=False),
        )

    @admin.action(description="Export JSON lines", permissions=["view"])
    def export_selected(self, request: HttpRequest, queryset) -> StreamingHttpResponse:
        return jsonl_response(request, queryset)

    def export_view(self, request: HttpRequest) -> HttpResponse:
        """Every row the changelist shows with the same filters, search and dates."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        try:
            queryset = self.get_changelist_instance(request).get_queryset(request)
        except IncorrectLookupParameters:
            changelist = reverse("admin:agents_app_auditevent_changelist")
            return HttpResponseRedirect(f"{changelist}?e=1")
        return jsonl_response(request, queryset)


@admin.register(KillSwitch)
class KillSwitchAdmin(admin.ModelAdmin):
    """One row. Saving it engages or releases the switch through the service (audited, paused
    runs resumed); staff with change permission only."""

    list_display = ["__str__", "reason", "changed_by", "changed_at"]
    fields = ["engaged", "reason", "changed_by", "changed_at"]
    readonly_fields = ["changed_by", "changed_at"]

    def get_queryset(self, request):
        KillSwitch.current()
        return super().get_queryset(request)

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        kill_switch_set(
            engaged=obj.engaged,
            reason=obj.reason,
            actor=request.user,
            interface=AuditInterface.ADMIN,
        )
        self.message_user(
            request,
            "Kill switch engaged: runs pause at their next step and none start."
            if obj.engaged
            else "Kill switch released: paused runs go on where they were.",
            messages.WARNING if obj.engaged else messages.SUCCESS,
        )


class WebhookForm(forms.ModelForm):
    """The same rules as the API: http(s), a public host unless allowed, known event types."""

    url = forms.URLField(max_length=2000, assume_scheme="https")

    class Meta:
        model = Webhook
        fields = ["owner", "url", "events", "active"]

    def clean_url(self) -> str:
        try:
            return webhook_url_check(self.cleaned_data["url"])
        except DomainError as error:
            raise forms.ValidationError(error.message) from None

    def clean_events(self) -> list[str]:
        try:
            return webhook_events_check(self.cleaned_data["events"])
        except DomainError as error:
            raise forms.ValidationError(error.message) from None


@admin.register(Webhook)
class WebhookAdmin(admin.ModelAdmin):
    form = WebhookForm
    list_display = ["id", "owner", "url", "events", "active", "created_at"]
    list_filter = ["active"]
    search_fields = ["url", "owner__username"]
    raw_id_fields = ["owner"]
    fields = ["owner", "url", "events", "active", "secret", "created_at"]
    readonly_fields = ["secret", "created_at"]


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    """The delivery log. Read-only; failed deliveries can be given one more attempt now."""

    list_display = [
        "id",
        "webhook",
        "event_type",
        "status",
        "attempts",
        "last_status_code",
        "last_error",
        "next_attempt_at",
        "created_at",
        "delivered_at",
    ]
    list_filter = ["status", "event_type", "created_at"]
    search_fields = ["webhook__url", "webhook__owner__username"]
    list_select_related = ["webhook"]
    actions = ["retry_now"]

    def has_retry_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("agents_app.change_webhook")

    @admin.action(description="Retry selected failed deliveries now", permissions=["retry"])
    def retry_now(self, request: HttpRequest, queryset) -> None:
        count = webhook_deliveries_retry(delivery_ids=list(queryset.values_list("pk", flat=True)))
        skipped = queryset.count() - count
        self.message_user(request, f"Queued {count} failed delivery(ies) again.", messages.SUCCESS)
        if skipped:
            self.message_user(request, f"Left {skipped} not failed alone.", messages.WARNING)
