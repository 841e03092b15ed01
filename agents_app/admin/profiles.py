"""Staff manage agent profiles: persona, connection and model, tools picked from the ones that
exist, limits; the connection and model a profile comes to now shown beside what is set."""

from django import forms
from django.contrib import admin
from django.contrib.admin.widgets import FilteredSelectMultiple
from django.db.models import Subquery
from django.http import HttpRequest

from agents_app.models import AgentProfile, LLMConnection
from agents_app.orchestration.presenters import effective_connection, effective_model
from agents_app.orchestration.selectors import default_connection
from agents_app.orchestration.tools import tool_names_known


class WordListField(forms.CharField):
    """A list of words typed as one line, separated by commas or spaces."""

    def prepare_value(self, value):
        return ", ".join(value) if isinstance(value, list) else value

    def to_python(self, value) -> list[str]:
        text = super().to_python(value) or ""
        return [word for word in text.replace(",", " ").split() if word]


UNKNOWN_TOOL = "No tool is named %(value)s: pick from the tools listed under Tools."


class AgentProfileForm(forms.ModelForm):
    specialisations = WordListField(
        required=False,
        help_text="Separated by commas, e.g. code_generation, testing. The head node scores "
        "task features against them.",
        widget=forms.TextInput(attrs={"size": 80}),
    )
    allowed_tools = forms.MultipleChoiceField(
        required=False,
        label="allowed tools",
        error_messages={"invalid_choice": UNKNOWN_TOOL},
        help_text="None picked: every tool.",
        widget=FilteredSelectMultiple("allowed tools", is_stacked=False),
    )
    excluded_tools = forms.MultipleChoiceField(
        required=False,
        label="excluded tools",
        error_messages={"invalid_choice": UNKNOWN_TOOL},
        help_text="Never offered to its runs.",
        widget=FilteredSelectMultiple("excluded tools", is_stacked=False),
    )

    class Meta:
        model = AgentProfile
        fields = [
            "name",
            "role",
            "persona",
            "connection",
            "model",
            "temperature",
            "planning_connection",
            "verifying_connection",
            "specialisations",
            "allowed_tools",
            "excluded_tools",
            "concurrency_limit",
            "max_tokens",
            "max_tool_calls",
            "max_seconds",
        ]
        widgets = {"persona": forms.Textarea(attrs={"rows": 14, "cols": 100})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.known_tools = set(tool_names_known())
        for field in ("allowed_tools", "excluded_tools"):
            # A stored name whose tool has gone stays listed, so staff see it and remove it.
            stored = list(getattr(self.instance, field, None) or [])
            names = sorted(self.known_tools | set(stored))
            self.fields[field].choices = [(name, name) for name in names]
        self.fields["connection"].empty_label = "the default connection"
        for field in ("planning_connection", "verifying_connection"):
            self.fields[field].empty_label = "the connection above"

    def _known(self, field: str) -> list[str]:
        names = self.cleaned_data.get(field) or []
        unknown = [name for name in names if name not in self.known_tools]
        if unknown:
            raise forms.ValidationError(
                UNKNOWN_TOOL, params={"value": ", ".join(unknown)}, code="invalid_choice"
            )
        return list(names)

    def clean_allowed_tools(self) -> list[str]:
        return self._known("allowed_tools")

    def clean_excluded_tools(self) -> list[str]:
        return self._known("excluded_tools")


@admin.register(AgentProfile)
class AgentProfileAdmin(admin.ModelAdmin):
    form = AgentProfileForm
    list_display = [
        "name",
        "role",
        "connection_now",
        "model_now",
        "temperature",
        "concurrency_limit",
        "updated_at",
    ]
    list_filter = ["role", "connection"]
    search_fields = ["name", "persona", "specialisations"]
    readonly_fields = ["connection_now", "model_now", "created_at", "updated_at"]
    fieldsets = [
        (None, {"fields": ["name", "role", "persona"]}),
        (
            "Model",
            {"fields": ["connection", "model", "temperature", "connection_now", "model_now"]},
        ),
        # Phase models (seed 004): a large model may plan and verify for a small executor.
        ("Models per phase", {"fields": ["planning_connection", "verifying_connection"]}),
        ("Work", {"fields": ["specialisations", "allowed_tools", "excluded_tools"]}),
        (
            "Limits",
            {"fields": ["concurrency_limit", "max_tokens", "max_tool_calls", "max_seconds"]},
        ),
        (None, {"fields": ["created_at", "updated_at"]}),
    ]

    def get_queryset(self, request: HttpRequest):
        default_connection()  # the seeded connection as the LLM_* settings are now
        # The default connection rides along with each row: one query for a page, not per row.
        default = LLMConnection.objects.filter(is_default=True, enabled=True)
        return (
            super()
            .get_queryset(request)
            .select_related("connection")
            .annotate(
                default_id=Subquery(default.values("pk")[:1]),
                default_name=Subquery(default.values("name")[:1]),
                default_model=Subquery(default.values("model")[:1]),
            )
        )

    def _default(self, obj: AgentProfile) -> LLMConnection | None:
        if not hasattr(obj, "default_id"):  # a profile being added: not read by get_queryset
            return default_connection()
        if obj.default_id is None:
            return None
        return LLMConnection(pk=obj.default_id, name=obj.default_name, model=obj.default_model)

    @admin.display(description="connection now")
    def connection_now(self, obj: AgentProfile) -> str:
        connection = effective_connection(obj, self._default(obj))
        if connection is None:
            return "none: no LLM is configured"
        return connection.name if obj.connection_id else f"{connection.name} (the default)"

    @admin.display(description="model now")
    def model_now(self, obj: AgentProfile) -> str:
        model = effective_model(obj, self._default(obj))
        if not model:
            return "none: no LLM is configured"
        return model if obj.model else f"{model} (the connection's)"
