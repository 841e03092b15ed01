"""The plan editor of a plan's approval dialog: a formset of steps (objective, tools, the
earlier steps it needs by their numbers from 1), with add, remove and move up or down done
on the server (htmx swaps the dialog back, or a plain POST renders the page again). What it
sends is the same edited plan the REST and MCP `modify` send, decided by the same service;
the raw JSON box stays beside it."""

import re
from dataclasses import dataclass
from typing import Any

from django import forms
from django.http import QueryDict

from agents_app.core.errors import DomainError, ErrorCode
from tools_app.models import Tool

PREFIX = "step"
_NUMBER = re.compile(r"\d+")
# add | remove:N | up:N | down:N, N the step's place in the form (from 0).
_OPERATION = re.compile(r"^(?P<verb>add|remove|up|down)(?::(?P<at>\d+))?$")


class PlanStepForm(forms.Form):
    objective = forms.CharField(required=False, widget=forms.TextInput(attrs={"size": 40}))
    tool_names = forms.MultipleChoiceField(required=False)
    depends_on = forms.CharField(
        required=False, widget=forms.TextInput(attrs={"inputmode": "numeric", "size": 6})
    )
    # The planner's why, kept as it was (the step's prompt shows it).
    reasoning = forms.CharField(required=False, widget=forms.HiddenInput, strip=False)

    def __init__(self, *args: Any, tools: list[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["tool_names"].choices = [(name, name) for name in tools]


PlanStepFormSet = forms.formset_factory(PlanStepForm, extra=0)


@dataclass
class StepRow:
    """One step as the editor holds it: its dependencies as the text typed (numbers from 1)."""

    objective: str = ""
    tool_names: tuple[str, ...] = ()
    depends_on: str = ""
    reasoning: str = ""

    def initial(self) -> dict[str, Any]:
        return {
            "objective": self.objective,
            "tool_names": list(self.tool_names),
            "depends_on": self.depends_on,
            "reasoning": self.reasoning,
        }


def rows_of_plan(steps: list[Any]) -> list[StepRow]:
    """The rows of a plan's steps as the planner (or the last edit) wrote them, `depends_on`
    turned from the plan's indexes (from 0) into step numbers (from 1)."""
    rows = []
    for step in steps:
        step = step if isinstance(step, dict) else {"objective": str(step)}
        depends = [d + 1 for d in step.get("depends_on") or [] if isinstance(d, int)]
        rows.append(
            StepRow(
                objective=str(step.get("objective", "")),
                tool_names=tuple(str(t) for t in step.get("tool_names") or []),
                depends_on=", ".join(str(n) for n in depends),
                reasoning=str(step.get("reasoning", "")),
            )
        )
    return rows


def posted(data: QueryDict) -> bool:
    """Whether `data` holds the editor's rows (its management form)."""
    return f"{PREFIX}-TOTAL_FORMS" in data


def rows_posted(data: QueryDict) -> list[StepRow]:
    """The rows as the person left them, unchecked (what they typed is kept)."""
    formset = PlanStepFormSet(data, prefix=PREFIX, form_kwargs={"tools": []})
    try:
        forms_posted = formset.forms
    except forms.ValidationError:  # no or a broken management form: nothing to keep
        return []
    return [
        StepRow(
            objective=form["objective"].value() or "",
            tool_names=tuple(form["tool_names"].value() or ()),
            depends_on=form["depends_on"].value() or "",
            reasoning=form["reasoning"].value() or "",
        )
        for form in forms_posted
    ]


def operate(rows: list[StepRow], operation: str) -> list[StepRow]:
    """`rows` after one operation: add a step at the end, remove one, or move one up or down.
    Dependencies follow the steps they name; one on a removed step goes. An unknown operation
    or place changes nothing."""
    found = _OPERATION.match(operation or "")
    if not found:
        return rows
    verb, at = found["verb"], int(found["at"]) if found["at"] is not None else None
    order = list(range(len(rows)))  # order[new place] = old place
    if verb == "add":
        return [*rows, StepRow()]
    if at is None or not 0 <= at < len(rows):
        return rows
    if verb == "remove":
        order.pop(at)
    elif verb == "up" and at > 0:
        order[at - 1], order[at] = order[at], order[at - 1]
    elif verb == "down" and at < len(rows) - 1:
        order[at + 1], order[at] = order[at], order[at + 1]
    number_of = {old + 1: new + 1 for new, old in enumerate(order)}
    moved = []
    for old in order:
        row = rows[old]
        depends = [number_of[n] for n in _numbers(row.depends_on) if n in number_of]
        moved.append(
            StepRow(row.objective, row.tool_names, ", ".join(map(str, depends)), row.reasoning)
        )
    return moved


def _numbers(text: str) -> list[int]:
    return [int(n) for n in _NUMBER.findall(text or "")]


def plan_of_rows(rows: list[StepRow]) -> dict[str, Any]:
    """The edited plan as the service takes it ({"steps": [...]}, `depends_on` from 0).
    Raises INVALID_ARGUMENTS when a step's dependencies are not step numbers; the service
    checks the rest (objectives, tools, earlier steps only)."""
    steps = []
    for number, row in enumerate(rows, start=1):
        text = row.depends_on.strip()
        if text and not re.fullmatch(r"\d+(\s*[,;\s]\s*\d+)*", text):
            raise DomainError(
                ErrorCode.INVALID_ARGUMENTS,
                f"Step {number}: the steps it needs are step numbers, like 1, 2",
                {"field": "arguments", "step": number},
            )
        steps.append(
            {
                "objective": row.objective,
                "tool_names": list(row.tool_names),
                "depends_on": [n - 1 for n in _numbers(text)],
                "reasoning": row.reasoning,
            }
        )
    return {"steps": steps}


def editor_formset(rows: list[StepRow]) -> Any:
    """The formset the dialog renders for `rows`, its tool choices every enabled tool and the
    ones the rows name."""
    named = {name for row in rows for name in row.tool_names}
    enabled = set(Tool.objects.filter(enabled=True).values_list("name", flat=True))
    return PlanStepFormSet(
        initial=[row.initial() for row in rows],
        prefix=PREFIX,
        form_kwargs={"tools": sorted(enabled | named)},
    )
