"""The run page, rendered on the server: readable without JavaScript, live with htmx."""

import json
import re
from html import unescape

import pytest

from agents_app.models import RunEvent, RunStatus, Step
from tests.support.markup import by_id, ids
from tests.support.runs import (
    LONG_ARGUMENTS,
    add_plan,
    complete_step,
    end,
    fail,
    make_run,
    succeed,
    to_status,
)


@pytest.fixture
def working_run(owner):
    """A running run: step 1 completed with a tool call and thinking, 2 and 3 pending."""
    run = make_run(owner, "Write the notes")
    plan = add_plan(run, ["Collect the facts", "Write the notes", "Check the notes"])
    complete_step(run, plan, 0, output="Facts collected", thinking="First I should look around.")
    return run


def page(client, run) -> str:
    response = client.get(f"/runs/{run.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def test_the_page_shows_the_task_and_its_status(owner_session, working_run):
    html = page(owner_session, working_run)

    assert "Write the notes" in html
    assert '<span id="run-status" class="badge large" data-status="running">running</span>' in html


def test_the_plan_lists_each_step_with_its_status_and_index(owner_session, working_run):
    html = page(owner_session, working_run)

    assert 'id="plan"' in html
    steps = [by_id(html, f"step-1-{i}") for i in range(3)]
    assert [s["data-status"] for s in steps] == ["completed", "pending", "pending"]
    assert [s["data-index"] for s in steps] == ["0", "1", "2"]
    assert all("step" in s["class"].split() for s in steps)
    assert "Collect the facts" in html and "Check the notes" in html
    assert "Facts collected" in html


def test_a_tool_call_shows_its_name_and_arguments_cut_at_80_characters(owner_session, working_run):
    html = page(owner_session, working_run)

    full = json.dumps(LONG_ARGUMENTS, separators=(",", ":"))
    title, shown = re.search(
        r'<code class="tool-args" title="([^"]*)">([^<]*)</code>', html
    ).groups()
    assert len(full) > 80
    assert unescape(shown) == full[:80] + "…"
    assert unescape(title) == full
    assert 'class="tool-name">write_file<' in html


def test_short_arguments_are_shown_whole(owner, owner_session):
    run = make_run(owner)
    plan = add_plan(run, ["Read"])
    complete_step(run, plan, 0, arguments={"path": "a.txt"})

    html = page(owner_session, run)

    assert "{&quot;path&quot;:&quot;a.txt&quot;}</code>" in html


def test_the_reasoning_panel_shows_each_steps_thinking(owner_session, working_run):
    html = page(owner_session, working_run)

    panel = html[html.index('id="reasoning"') :]
    assert "First I should look around." in panel
    assert 'id="reasoning-live"' in html


def test_a_think_block_left_in_an_output_moves_to_the_reasoning_panel(owner, owner_session):
    run = make_run(owner)
    plan = add_plan(run, ["Think"])
    complete_step(run, plan, 0, output="<thinking>Hidden musing</thinking>The visible answer")

    html = page(owner_session, run)

    assert "&lt;thinking&gt;" not in html
    assert html.index("Hidden musing") > html.index('id="reasoning"')
    assert "The visible answer" in html


def test_a_finished_run_shows_the_answer_and_the_verifiers_reasoning(owner_session, working_run):
    succeed(
        working_run,
        "<think>Let me wrap up.</think>Here are your notes.",
        reasoning="It all checks out.",
    )

    html = page(owner_session, working_run)

    result = html[html.index('id="result"') :]
    assert result.index("Here are your notes.") < result.index("</section>")
    assert "It all checks out." in html
    assert "Let me wrap up." in html[html.index('id="reasoning"') :]
    assert by_id(html, "progress")["aria-valuenow"] == "100"
    assert 'id="restart-run"' in html and 'id="cancel-run"' not in html


def test_a_failed_run_shows_the_error(owner, owner_session):
    run = fail(make_run(owner), "BUDGET_EXCEEDED", "The run used too many tokens")

    html = page(owner_session, run)

    assert "BUDGET_EXCEEDED" in html[html.index('id="result"') :]
    assert "The run used too many tokens" in html


def test_the_progress_bar_counts_the_done_steps(owner_session, working_run):
    html = page(owner_session, working_run)

    progress = by_id(html, "progress")
    assert progress["aria-valuenow"] == "33"
    assert progress["role"] == "progressbar"


def test_the_event_log_lists_every_event_once(owner_session, working_run):
    html = page(owner_session, working_run)

    seqs = list(RunEvent.objects.filter(run=working_run).values_list("seq", flat=True))
    log_ids = [i for i in ids(html) if re.fullmatch(r"event-\d+", i)]
    assert log_ids == [f"event-{seq}" for seq in seqs]
    assert "write_file" in html[html.index('id="event-log"') :]


def test_the_page_connects_to_the_runs_socket_after_its_last_event(owner_session, working_run):
    html = page(owner_session, working_run)

    live = by_id(html, "run-live")
    assert live["hx-ext"] == "ws"
    assert live["ws-connect"] == f"/ws/runs/{working_run.pk}/?after={working_run.event_seq}"
    assert by_id(html, "run-last-seq")["data-seq"] == str(working_run.event_seq)


def test_a_running_run_offers_cancel_not_restart(owner_session, working_run):
    html = page(owner_session, working_run)

    assert 'id="cancel-run"' in html
    assert 'id="restart-run"' not in html
    assert f'action="/runs/{working_run.pk}/cancel/"' in html


def test_a_replanned_run_shows_the_new_plan_and_keeps_the_old_one(owner, owner_session):
    run = make_run(owner)
    add_plan(run, ["Old step"])
    to_status(run, RunStatus.VERIFYING, RunStatus.PLANNING)
    add_plan(run, ["New step"], version=2, reason="The notes were incomplete")

    html = page(owner_session, run)

    assert "step-2-0" in ids(html) and "step-1-0" in ids(html)
    assert html.index("New step") < html.index("Old step")
    assert "The notes were incomplete" in html


@pytest.mark.dialect
def test_the_page_reads_the_run_in_a_bounded_number_of_queries(
    owner, owner_session, django_assert_max_num_queries
):
    run = make_run(owner)
    plan = add_plan(run, [f"Step {n}" for n in range(6)])
    for index in range(6):
        complete_step(run, plan, index, thinking=f"thought {index}")
    assert Step.objects.filter(run=run).count() == 6

    # 15: one counts the plans a person rejected (the Replans shown, issue 32, finding 6).
    with django_assert_max_num_queries(15):
        owner_session.get(f"/runs/{run.pk}/")


def test_another_users_run_is_not_found(outsider_session, working_run):
    outsider_client = outsider_session
    assert outsider_client.get(f"/runs/{working_run.pk}/").status_code == 404


def test_a_missing_run_is_not_found(owner_session):
    owner_client = owner_session
    assert owner_client.get("/runs/999999/").status_code == 404


@pytest.mark.parametrize("outcome", ["succeeded", "failed", "cancelled"])
def test_the_result_event_carries_its_outcome_for_its_colour(owner, owner_session, outcome):
    run = add_plan(make_run(owner), ["One"]).run
    if outcome == "succeeded":
        succeed(run, "done")
    elif outcome == "failed":
        fail(run)
    else:
        end(run, "cancelled", "CANCELLED", "Cancelled by request")

    html = owner_session.get(f"/runs/{run.pk}/").content.decode()

    [result] = re.findall(r'<li id="event-\d+"[^>]*data-type="result"[^>]*>', html)
    assert f'data-outcome="{outcome}"' in result
