from django.contrib import admin, messages

from agents_app.models import ApiKey, Plan, Run, RunEvent, Step, Task, ToolCall


class ReadOnlyAdmin(admin.ModelAdmin):
    """History is written by the engine only; staff read it here."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["id", "owner", "short_text", "created_at"]
    list_filter = ["created_at"]
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
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "owner", "status", "attempt", "replans", "error_code", "created_at"]
    list_filter = ["status", "error_code", "created_at"]
    search_fields = ["task__text", "owner__username"]
    raw_id_fields = ["task", "owner"]
    readonly_fields = ["event_seq", "lease_owner", "lease_expires_at", "started_at", "finished_at"]
    inlines = [StepInline]


@admin.register(Plan)
class PlanAdmin(admin.ModelAdmin):
    list_display = ["id", "run", "version", "created_at"]
    raw_id_fields = ["run"]


@admin.register(Step)
class StepAdmin(admin.ModelAdmin):
    list_display = ["id", "run", "index", "status", "retry_count", "started_at", "finished_at"]
    list_filter = ["status"]
    raw_id_fields = ["run", "plan"]


@admin.register(ToolCall)
class ToolCallAdmin(admin.ModelAdmin):
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
    raw_id_fields = ["user"]

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
