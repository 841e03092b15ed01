"""The HTML the WebSocket consumers send: out-of-band swaps whose ids match the run page's."""

import pytest
from django.test import Client

from agents_app.core.events import event_message
from agents_app.models import Run, RunEvent, RunStatus
from agents_app.web import fragments
from tests.support.markup import by_id, elements, ids, top_level
from tests.support.runs import add_plan, complete_step, make_run, succeed


def messages(run: Run, after: int = 0) -> list[dict]:
    return [event_message(e) for e in RunEvent.objects.filter(run=run, seq__gt=after)]


@pytest.fixture
def run(owner):
    run = make_run(owner, "Write the notes")
    plan = add_plan(run, ["Collect", "Write"])
    complete_step(run, plan, 0, thinking="Looking around first.")
    return run


def page_ids(owner, run) -> set[str]:
    client = Client()
    client.force_login(owner)
    return set(ids(client.get(f"/runs/{run.pk}/").content.decode()))


def test_every_top_level_fragment_swaps_out_of_band(run):
    html = fragments.render_run_events(run=run, events=messages(run))

    assert all(attrs.get("hx-swap-oob") for _, attrs in top_level(html))


def test_the_fragments_ids_are_the_pages_ids(owner, run):
    html = fragments.render_run_events(run=run, events=messages(run))

    targets = set()
    for _, attrs in top_level(html):
        oob = attrs["hx-swap-oob"]
        targets.add(oob.split(":#", 1)[1] if ":#" in oob else attrs["id"])
    assert targets
    assert targets <= page_ids(owner, run)
    assert {
        "run-status",
        "run-controls",
        "plan",
        "progress",
        "reasoning-saved",
        "event-log",
    } <= targets


def test_the_fragments_end_with_the_last_seq(run):
    html = fragments.render_run_events(run=run, events=messages(run))

    last = top_level(html)[-1]
    assert last[1]["id"] == "run-last-seq"
    assert last[1]["data-seq"] == str(run.event_seq)


def test_each_event_becomes_one_log_line_appended_to_the_log(run):
    html = fragments.render_run_events(run=run, events=messages(run, after=3))

    wrapper = next(attrs for _, attrs in top_level(html) if "#event-log" in attrs["hx-swap-oob"])
    assert wrapper["hx-swap-oob"] == "beforeend:#event-log"
    lines = [i for i in ids(html) if i.startswith("event-")]
    assert lines == [f"event-{seq}" for seq in range(4, run.event_seq + 1)]


def test_a_step_event_re_renders_that_step_from_the_rows(run):
    step_completed = messages(run)[-1]
    assert step_completed["event_type"] == "step_completed"

    html = fragments.render_run_events(run=run, events=[step_completed])

    step = by_id(html, "step-1-0")
    assert (step["data-status"], step["hx-swap-oob"]) == ("completed", "true")
    assert "step-1-1" not in ids(html)
    assert "Looking around first." in html


def test_a_status_change_re_renders_from_the_rows_not_the_stale_run(run):
    stale = Run.objects.get(pk=run.pk)
    before = run.event_seq
    succeed(run, "All done")

    html = fragments.render_run_events(run=stale, events=messages(run, after=before))

    assert by_id(html, "run-status")["data-status"] == "succeeded"
    assert "All done" in html
    assert 'id="restart-run"' in html
    assert by_id(html, "progress")["aria-valuenow"] == "100"


def test_the_controls_in_a_fragment_post_through_htmx(run):
    html = fragments.render_run_events(run=run, events=messages(run)[:1])

    assert f'hx-post="/runs/{run.pk}/cancel/"' in html


def test_no_events_render_nothing(run):
    assert fragments.render_run_events(run=run, events=[]) == ""


def test_a_token_is_appended_escaped_to_the_stream():
    html = fragments.render_run_token(
        run_id=1,
        message={
            "token": "<script>alert(1)</script>",
            "phase": "execution",
            "step_index": 1,
            "reasoning": False,
        },
    )

    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert '<span hx-swap-oob="beforeend:#stream">' in html
    assert by_id(html, "stream-label")["hx-swap-oob"] == "true"
    assert "Step 2" in html


def test_a_reasoning_token_goes_to_the_live_reasoning_panel():
    html = fragments.render_run_token(
        run_id=1,
        message={"token": "hmm & so", "phase": "planning", "step_index": None, "reasoning": True},
    )

    assert '<span hx-swap-oob="beforeend:#reasoning-live">hmm &amp; so</span>' in html
    assert "#stream" not in html


def test_the_token_targets_exist_on_the_page(owner, run):
    present = page_ids(owner, run)

    assert {"stream", "stream-label", "reasoning-live", "reasoning-live-label"} <= present


def test_a_step_start_clears_the_streamed_text(run):
    started = next(m for m in messages(run) if m["event_type"] == "step_started")

    html = fragments.render_run_events(run=run, events=[started])

    assert by_id(html, "stream")["hx-swap-oob"] == "true"


def test_the_dashboard_row_carries_the_status_badge(owner, run):
    html = fragments.render_run_row(run=run)

    row = top_level(html)[0]
    assert row == ("tr", row[1])
    assert (row[1]["id"], row[1]["hx-swap-oob"]) == (f"run-row-{run.pk}", "true")
    badge = next(a for tag, a in elements(html) if "badge" in (a.get("class") or "").split())
    assert badge["data-status"] == RunStatus.RUNNING


def test_the_dashboard_row_matches_the_dashboards_row(owner, run):
    client = Client()
    client.force_login(owner)
    dashboard = client.get("/").content.decode()

    row = fragments.render_run_row(run=run)

    assert row.replace(' hx-swap-oob="true"', "").strip() in dashboard
