"""Readable text on the run page: a model's Markdown rendered (and defused), the reasoning of
every phase kept after it ends, and the streaming panel holding the final answer."""

import pytest

from agents_app.core.events import event_message
from agents_app.models import Plan, RunEvent
from agents_app.web import fragments
from tests.support.markup import by_id, elements
from tests.support.runs import add_plan, complete_step, fail, make_run, succeed

pytestmark = pytest.mark.django_db

ANSWER = """## Decisions

- ship the dashboard on **Friday**
- move the import job

| who | what |
|---|---|
| Ana | dashboard |

<script>alert('x')</script> [bad](javascript:alert(1))
"""


def page(client, run) -> str:
    response = client.get(f"/runs/{run.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def region(html: str, element_id: str, end: str) -> str:
    start = html.index(f'id="{element_id}"')
    return html[start : html.index(end, start)]


def tags_in(html: str) -> set[str]:
    return {tag for tag, _ in elements(html)}


@pytest.fixture
def finished_run(owner):
    run = make_run(owner, "Write up the meeting")
    plan = add_plan(run, ["Write the notes"])
    Plan.objects.filter(pk=plan.pk).update(thinking="Two steps would be one too many.")
    complete_step(run, plan, 0, output="Wrote `notes.md`:\n\n1. first\n2. second")
    return succeed(run, ANSWER, reasoning="notes.md holds all three decisions.")


def test_a_finished_runs_result_shows_its_markdown_rendered(owner_session, finished_run):
    result = region(page(owner_session, finished_run), "result", "agent-result")

    assert "<h2>Decisions</h2>" in result
    assert "<strong>Friday</strong>" in result
    assert {"ul", "li", "table", "th", "td"} <= tags_in(result)
    assert "## Decisions" not in result


def test_hostile_html_in_the_answer_reaches_the_page_as_text(owner_session, finished_run):
    html = page(owner_session, finished_run)
    result = region(html, "result", "</section>")

    assert "<script>alert" not in html
    assert "&lt;script&gt;alert" in result
    assert not any("javascript:" in (attrs.get("href") or "") for _, attrs in elements(html))


def test_a_steps_output_is_rendered_as_markdown(owner_session, finished_run):
    step = region(page(owner_session, finished_run), "step-1-0", "</section>")

    assert "<code>notes.md</code>" in step
    assert "<ol>" in step


def test_the_planners_reasoning_is_shown_after_the_run(owner_session, finished_run):
    reasoning = region(page(owner_session, finished_run), "reasoning-saved", "reasoning-live")

    assert "Planning" in reasoning
    assert "Two steps would be one too many." in reasoning
    assert reasoning.index("Planning") < reasoning.index("Verification")


def test_each_phase_has_its_own_collapsible_panel_the_last_one_open(owner, owner_session):
    run = make_run(owner)
    plan = add_plan(run, ["Collect", "Write"])
    Plan.objects.filter(pk=plan.pk).update(thinking="Plan it in two.")
    complete_step(run, plan, 0, thinking="Collect first.")
    complete_step(run, plan, 1, thinking="Then write.")
    succeed(run, "done", reasoning="Both steps worked.")

    reasoning = region(page(owner_session, run), "reasoning-saved", "reasoning-live")

    panels = [attrs for tag, attrs in elements(reasoning) if tag == "details"]
    assert len(panels) == 4
    assert ["open" in attrs for attrs in panels] == [False, False, False, True]
    for label in ("Planning", "Step 1", "Step 2", "Verification"):
        assert f"<h3>{label}</h3>" in reasoning


def test_the_verifiers_own_thinking_is_kept_beside_its_reasoning(owner, owner_session):
    run = make_run(owner)
    add_plan(run, ["Write"])
    succeed(run, "done", reasoning="The file is there.")
    event = RunEvent.objects.get(run=run, type="verification")
    event.payload = {**event.payload, "thinking": "Let me check the evidence first."}
    RunEvent.objects.filter(pk=event.pk).update(payload=event.payload)

    reasoning = region(page(owner_session, run), "reasoning-saved", "reasoning-live")

    assert reasoning.index("Let me check the evidence first.") < reasoning.index(
        "The file is there."
    )


def test_the_placeholder_is_marked_so_live_reasoning_can_replace_it(owner, owner_session):
    run = make_run(owner)

    html = page(owner_session, run)

    assert "No reasoning recorded yet." in html
    assert any(
        "reasoning-empty" in (attrs.get("class") or "").split() for _, attrs in elements(html)
    )


def test_the_streaming_panel_keeps_the_final_answer_after_the_run(owner_session, finished_run):
    html = page(owner_session, finished_run)
    panel = region(html, "stream", "</section>")

    assert "<h2>Decisions</h2>" in panel
    assert "Final answer" in region(html, "stream-label", "</span>")


def test_a_run_still_working_has_an_empty_panel_for_its_tokens(owner, owner_session):
    run = make_run(owner)
    add_plan(run, ["Write"])

    html = page(owner_session, run)

    assert '<div id="stream" class="stream" aria-live="polite"></div>' in html


def test_a_failed_run_without_an_answer_says_so_in_the_panel(owner, owner_session):
    run = fail(make_run(owner))

    panel = region(page(owner_session, run), "stream", "</section>")

    assert "The model wrote no answer." in panel


def messages(run, types):
    events = RunEvent.objects.filter(run=run, type__in=types).order_by("seq")
    return [event_message(e) for e in events]


def test_a_new_plan_brings_the_planners_reasoning_live(owner):
    run = make_run(owner)
    plan = add_plan(run, ["Write"])
    Plan.objects.filter(pk=plan.pk).update(thinking="One step will do.")

    html = fragments.render_run_events(run=run, events=messages(run, ["plan_created"]))

    saved = region(html, "reasoning-saved", "</div>\n")
    assert "One step will do." in saved
    assert by_id(html, "reasoning-saved")["hx-swap-oob"] == "true"


def test_the_end_of_a_run_fills_the_panel_with_its_answer_live(owner, finished_run):
    html = fragments.render_run_events(
        run=finished_run, events=messages(finished_run, ["run_status"])
    )

    assert by_id(html, "stream")["hx-swap-oob"] == "true"
    assert "<h2>Decisions</h2>" in region(html, "stream", "reasoning-live-label")
