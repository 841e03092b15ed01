"""A run's end closes what it left open: no tool call outlives its run as `running`."""

import pytest

from agents_app.models import Run, ToolCall
from tests.support.runs import add_plan, fail, make_run

pytestmark = pytest.mark.django_db


@pytest.mark.dialect
def test_a_tool_call_left_running_fails_when_its_run_ends(owner):
    run = make_run(owner)
    plan = add_plan(run, ["write it"])
    step = plan.steps.get(index=0)
    left = ToolCall.objects.create(run=run, step=step, tool="write_file", arguments={})
    waiting = ToolCall.objects.create(
        run=run, step=step, tool="write_file", arguments={}, status="waiting_approval"
    )
    # Counted as the worker counts each call, in the commit that writes its row.
    Run.objects.filter(pk=run.pk).update(tool_calls_made=2)

    fail(run, "INTERNAL_ERROR", "the worker crashed")

    left.refresh_from_db()
    waiting.refresh_from_db()
    assert (left.status, left.error) == ("failed", "run ended: INTERNAL_ERROR")
    assert (waiting.status, waiting.error) == ("skipped", "run ended: INTERNAL_ERROR")
