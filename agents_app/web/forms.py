"""The pages' forms. They only turn text into Python values; the services decide what is valid."""

import json
from typing import Any

from django import forms

from agents_app.connections.selectors import connections_enabled
from agents_app.core.inputs import STORED_INT_MAX, json_problem
from agents_app.models import ClosePolicy, Decision, Remember, TimeoutStrategy

FAST_PATH_CHOICES = [
    ("", "by setting"),
    ("direct", "direct (one step)"),
    ("plan", "always plan"),
]


class TaskForm(forms.Form):
    # Not required here: an empty task reaches task_submit, whose VALIDATION_ERROR is the one
    # message for it on every front end.
    task = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(
            attrs={"rows": 6, "placeholder": "Describe the task, as you would to a colleague."}
        ),
    )
    context = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "placeholder": '{"repository": "…"}'}),
    )
    # Bounded by their columns (PositiveIntegerField), so PostgreSQL never sees a bigger one.
    max_tokens = forms.IntegerField(required=False, min_value=1, max_value=STORED_INT_MAX)
    max_tool_calls = forms.IntegerField(required=False, min_value=1, max_value=STORED_INT_MAX)
    approve_plan = forms.BooleanField(required=False, label="Show me the plan first")
    # Task.team: a head node splits the task among the agent profiles (orchestration).
    team = forms.BooleanField(required=False, label="Use the team")
    # Run.close_policy: what a team's children do when it ends before them.
    close_policy = forms.ChoiceField(
        required=False,
        choices=[(ClosePolicy.CANCEL, "cancel them"), (ClosePolicy.FINISH, "let them finish")],
        initial=ClosePolicy.CANCEL,
        label="If the team stops first, its working agents",
    )
    approval_timeout = forms.IntegerField(required=False, min_value=1, max_value=STORED_INT_MAX)
    # Task.fast_path: None (the site's AGENT_FAST_PATH_MAX_CHARS decides), True, False.
    fast_path = forms.TypedChoiceField(
        required=False,
        choices=FAST_PATH_CHOICES,
        coerce=lambda value: {"direct": True, "plan": False}[value],
        empty_value=None,
        label="Plan first",
    )
    approval_on_timeout = forms.ChoiceField(
        required=False,
        choices=[("", "the site's default"), *TimeoutStrategy.choices],
        label="When it expires",
    )
    # The enabled LLM connections, the default first and preselected; empty: the default.
    connection = forms.ChoiceField(required=False, label="Model")
    # Phase models (seed 004: a large planner, small executors); empty: `connection`'s.
    planning_connection = forms.ChoiceField(required=False, label="Planning model")
    verifying_connection = forms.ChoiceField(required=False, label="Verifying model")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        offered = list(connections_enabled())
        choices = [(str(c.pk), f"{c.name} ({c.model})") for c in offered]
        field = self.fields["connection"]
        field.choices = choices
        default = next((c for c in offered if c.is_default), None)
        field.initial = str(default.pk) if default else ""
        for name in ("planning_connection", "verifying_connection"):
            self.fields[name].choices = [("", "the model above"), *choices]

    def clean_context(self) -> Any:
        raw = self.cleaned_data["context"].strip()
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise forms.ValidationError(f"The context is not valid JSON: {exc}") from None


class DecisionForm(forms.Form):
    """A decision on an approval. `arguments` is read only for `modify`, and `remember` only
    for `approve`: the dialog sends every field whichever button was pressed."""

    decision = forms.ChoiceField(choices=Decision.choices)
    arguments = forms.CharField(required=False, strip=False)
    remember = forms.ChoiceField(required=False, choices=Remember.choices)
    note = forms.CharField(required=False)  # a rejected plan's feedback for the planner

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        decision = data.get("decision")
        if decision != Decision.APPROVE:
            data["remember"] = ""
        if decision != Decision.MODIFY:
            data["arguments"] = None
            return data
        try:
            data["arguments"] = json.loads(data.get("arguments") or "")
        except ValueError as exc:
            self.add_error("arguments", f"The arguments are not valid JSON: {exc}")
            return data
        if found := json_problem(data["arguments"]):
            path, problem = found
            self.add_error(
                "arguments",
                f"The arguments cannot be stored: {f'{path} ' if path else ''}{problem}",
            )
        return data
