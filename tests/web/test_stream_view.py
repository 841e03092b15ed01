"""The streaming panel in words: a plan's steps as they form, a verdict in sentences, plain
text as text, never the JSON the model writes; and the partial JSON reader behind it."""

import json

import pytest

from agents_app.web.live_stream import LiveStream
from agents_app.web.partial_json import NotJSON, parse_partial
from agents_app.web.stream_view import stream_view
from tests.support.markup import by_id, top_level

PLAN = json.dumps(
    {
        "steps": [
            {"objective": "Read notes.md", "tool_names": ["read_file"], "depends_on": []},
            {"objective": "Write summary.md", "tool_names": ["write_file"], "depends_on": [0]},
        ]
    }
)
VERDICT = json.dumps(
    {
        "task_complete": True,
        "reasoning": "summary.md exists.",
        "should_replan": False,
        "response": "The summary is in summary.md.",
        "evidence": [1, 2],
    }
)


def test_every_prefix_of_a_document_reads_as_part_of_the_whole():
    whole = json.loads(PLAN)
    for end in range(len(PLAN) + 1):
        value = parse_partial(PLAN[:end])
        if value is None:
            continue
        steps = value.get("steps", [])
        assert len(steps) <= len(whole["steps"])
        for got, full in zip(steps, whole["steps"], strict=False):
            if "objective" in got:
                assert full["objective"].startswith(got["objective"])
    assert parse_partial(PLAN) == whole


def test_a_string_cut_off_mid_escape_keeps_what_arrived():
    assert parse_partial('{"a": "say \\"hi\\" \\u00e9 and \\') == {"a": 'say "hi" é and '}
    assert parse_partial('{"a": "x\\u00') == {"a": "x"}


def test_a_key_without_a_value_yet_is_left_out():
    assert parse_partial('{"done": true, "count": 1') == {"done": True}
    assert parse_partial('{"done": tr') == {}
    assert parse_partial('{"done": true, "ste') == {"done": True}


def test_prose_or_a_fence_before_the_document_is_skipped():
    assert parse_partial('Here is the plan:\n```json\n{"steps": [') == {"steps": []}
    assert parse_partial("No JSON here") is None


def test_text_that_cannot_be_json_is_refused():
    with pytest.raises(NotJSON):
        parse_partial('{"a": nope, "b": 1}')
    with pytest.raises(NotJSON):
        parse_partial("{steps: []}")


def test_a_plan_being_written_shows_numbered_steps_not_json():
    half = PLAN[: PLAN.index("Write summary") + 5]

    view = stream_view("planning", half)

    assert view.steps == ["1. Read notes.md (with read_file)", "2. Write"]
    assert not view.text and not view.note


def test_a_plan_before_its_first_objective_says_it_is_being_written():
    assert stream_view("planning", '{"steps": [{"obj').note == "Writing the plan…"
    assert stream_view("planning", "{oops").note == "Writing the plan…"


def test_a_verdict_being_written_reads_as_sentences():
    view = stream_view("verification", VERDICT)

    assert view.lines == [
        "Verdict: the task is complete.",
        "Why: summary.md exists.",
        "Evidence: tool call 1, 2.",
    ]
    assert view.text == "The summary is in summary.md."


def test_an_incomplete_verdict_asking_for_a_replan_says_so():
    view = stream_view("verification", '{"task_complete": false, "should_replan": true, "re')

    assert view.lines == ["Verdict: the task is not complete yet.", "A new plan is needed."]


def test_a_plain_answer_is_shown_as_written():
    assert stream_view("execution", "The notes list **three** decisions").text == (
        "The notes list **three** decisions"
    )


def test_a_tool_call_written_as_json_in_a_step_is_not_shown_raw():
    view = stream_view("execution", '{"name": "write_file", "arguments": {')

    assert view.text == "" and view.note == "Preparing a tool call…"


def tokens(stream, phase, pieces, step_index=None):
    html = ""
    for piece in pieces:
        message = {"token": piece, "phase": phase, "step_index": step_index, "reasoning": False}
        html = stream.feed(run_id=1, message=message)
    return html


def test_the_socket_panel_grows_with_each_piece_and_replaces_itself():
    stream = LiveStream()
    pieces = [PLAN[i : i + 20] for i in range(0, len(PLAN), 20)]

    html = tokens(stream, "planning", pieces)

    assert by_id(html, "stream")["hx-swap-oob"] == "true"
    assert by_id(html, "stream-label")["hx-swap-oob"] == "true"
    assert "1. Read notes.md" in html and "2. Write summary.md" in html
    assert '{"' not in html and "&quot;" not in html
    assert all(attrs.get("hx-swap-oob") for _, attrs in top_level(html))


def test_a_new_phase_or_a_reset_starts_the_panel_over():
    stream = LiveStream()
    tokens(stream, "planning", [PLAN])

    html = tokens(stream, "execution", ["Reading the notes"], step_index=0)
    assert "Read notes.md" not in html and "Reading the notes" in html

    stream.reset()
    html = tokens(stream, "execution", [" now"], step_index=0)
    assert "Reading the notes" not in html


def test_streamed_text_is_escaped():
    html = tokens(LiveStream(), "execution", ["<script>alert(1)</script>"], step_index=0)

    assert "<script>" not in html and "&lt;script&gt;" in html


def test_reasoning_goes_to_the_live_reasoning_panel_not_the_answer():
    stream = LiveStream()
    message = {"token": "hmm", "phase": "planning", "step_index": None, "reasoning": True}

    html = stream.feed(run_id=1, message=message)

    assert '<span hx-swap-oob="beforeend:#reasoning-live">hmm</span>' in html
    assert 'id="stream"' not in html


def test_the_tool_choice_analysis_reads_as_the_capabilities_and_domain_it_names_so_far():
    answer = json.dumps({"capabilities": ["file_write", "web"], "domain": "files"})

    early = stream_view("analysis", answer[: answer.index("web")])
    whole = stream_view("analysis", answer)

    assert early.lines == ["Capabilities: file_write"]
    assert whole.lines == ["Capabilities: file_write, web", "Domain: files"]
    assert whole.note == "Choosing the tools this task needs…" and "{" not in "".join(whole.lines)
