"""Recorded runs the suite keeps (tests/runs/recorded/*.json) as regression tests of prompts and
tools (issue 36, item 4): each holds one run's rows (its task, plans, steps, tool calls and
model exchanges, each with its request's text), written by `keep` and loaded by `load` for any
owner. A change to a prompt, a tool's description or a tool's behaviour makes its replay
diverge: re-record them with `REPLAY_RECORD=1 uv run pytest tests/runs/test_kept_recordings.py`
when the change is meant."""

from pathlib import Path

from django.core import serializers
from django.core.management.color import no_style
from django.db import connection

from agents_app.models import ModelExchange, Plan, Run, Step, Task, ToolCall

KEPT = Path(__file__).resolve().parents[1] / "runs" / "recorded"
MODELS = (Task, Run, Plan, Step, ToolCall, ModelExchange)


def keep(run: Run, name: str) -> Path:
    """Write `run`'s rows to tests/runs/recorded/<name>.json; returns the path."""
    rows = [
        *Task.objects.filter(pk=run.task_id),
        *Run.objects.filter(pk=run.pk),
        *Plan.objects.filter(run=run).order_by("pk"),
        *Step.objects.filter(run=run).order_by("pk"),
        *ToolCall.objects.filter(run=run).order_by("pk"),
        *ModelExchange.objects.filter(run=run).order_by("seq"),
    ]
    path = KEPT / f"{name}.json"
    path.write_text(serializers.serialize("json", rows, indent=1) + "\n")
    return path


def load(name: str, owner) -> Run:
    """The run kept as `name`, made `owner`'s (on no connection: the default's); returns it."""
    run_id = None
    for found in serializers.deserialize("json", (KEPT / f"{name}.json").read_text()):
        row = found.object
        if isinstance(row, Task | Run):
            row.owner_id = owner.pk
        for field in ("connection_id", "planning_connection_id", "verifying_connection_id"):
            if hasattr(row, field):
                setattr(row, field, None)
        if isinstance(row, Run):
            run_id = row.pk
        found.save()
    # Rows saved with their own ids: the tables' sequences go past them (as loaddata does).
    with connection.cursor() as cursor:
        for statement in connection.ops.sequence_reset_sql(no_style(), MODELS):
            cursor.execute(statement)
    return Run.objects.get(pk=run_id)
