"""Progress says what happened: completed steps over planned ones, and what became of the rest
(issue 13's cancelled, failed and half-failed runs that showed a full bar)."""

import pytest

from agents_app.models import Run, Step
from agents_app.web.run_page import progress_of
from tests.support.markup import by_id
from tests.support.runs import add_plan, complete_step, end, make_run


@pytest.mark.parametrize(
    ("run_status", "steps", "percent", "label"),
    [
        ("cancelled", ["skipped", "skipped"], 0, "2 skipped · cancelled"),
        ("failed", ["failed"], 0, "1 failed · failed"),
        ("failed", ["failed", "skipped"], 0, "1 failed · 1 skipped · failed"),
        ("succeeded", ["failed", "skipped"], 0, "1 failed · 1 skipped · succeeded"),
        (
            "failed",
            ["completed", "timeout", "skipped"],
            33,
            "1 completed · 1 timed out · 1 skipped · failed",
        ),
        ("succeeded", ["completed", "completed"], 100, "2 completed · succeeded"),
        ("succeeded", [], 100, "succeeded"),
        ("succeeded", ["completed", "skipped"], 100, "1 completed · 1 skipped · succeeded"),
        ("running", ["completed", "running", "pending"], 33, "Step 2 of 3"),
        (
            "running",
            ["running", "completed", "running", "running", "pending"],
            20,
            "Steps 1, 3 and 4 of 5 running side by side",
        ),
        (
            "waiting_approval",
            ["completed", "pending"],
            50,
            "1 of 2 steps completed · waiting for your approval",
        ),
        ("running", ["failed", "pending"], 0, "0 of 2 steps completed"),
    ],
)
def test_progress_counts_completed_steps_and_names_what_became_of_the_rest(
    run_status, steps, percent, label
):
    progress = progress_of(Run(status=run_status), steps)

    assert (progress.percent, progress.label) == (percent, label)


def test_a_cancelled_run_with_its_steps_skipped_shows_no_progress_on_its_page_and_the_dashboard(
    owner, owner_session
):
    run = make_run(owner, "Write the notes")
    add_plan(run, ["Collect the facts", "Write the notes"])
    Step.objects.filter(run=run).update(status="skipped")
    end(run, "cancelled")

    html = owner_session.get(f"/runs/{run.pk}/").content.decode()
    progress = by_id(html, "progress")
    assert progress["aria-valuenow"] == "0"
    assert "2 skipped · cancelled" in html

    row = owner_session.get("/").content.decode()
    assert 'data-status="cancelled" title="2 skipped · cancelled"' in row
    assert "100%" not in row


def test_a_run_half_done_when_it_failed_shows_half(owner, owner_session):
    run = make_run(owner, "Write the notes")
    plan = add_plan(run, ["Collect the facts", "Write the notes"])
    complete_step(run, plan, 0, output="Facts collected")
    Step.objects.filter(run=run, index=1).update(status="failed")
    end(run, "failed", "TOOL_FAILED", "the tool broke")

    progress = by_id(owner_session.get(f"/runs/{run.pk}/").content.decode(), "progress")
    assert progress["aria-valuenow"] == "50"


def test_token_counts_have_thousands_separators(owner, owner_session):
    run = make_run(owner, "Write the notes")
    Run.objects.filter(pk=run.pk).update(
        prompt_tokens=12_000, completion_tokens=345, max_tokens=200_000
    )

    page = owner_session.get(f"/runs/{run.pk}/").content.decode()
    dashboard = owner_session.get("/").content.decode()

    assert "12,345 / 200,000" in page
    assert '<td data-label="Tokens" class="num">12,345</td>' in dashboard
