"""The new-task form. It only turns text into Python values; task_submit decides what is valid."""

import json
from typing import Any

from django import forms


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
    max_tokens = forms.IntegerField(required=False, min_value=1)
    max_tool_calls = forms.IntegerField(required=False, min_value=1)

    def clean_context(self) -> Any:
        raw = self.cleaned_data["context"].strip()
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise forms.ValidationError(f"The context is not valid JSON: {exc}") from None
