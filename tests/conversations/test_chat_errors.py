"""Seed 002's error list in a chat: each shows a clear message and leaves the conversation
usable (the next message is answered, and the transcript replays without a call lacking its
result). In-process, with the scripted LLM."""

import json
import time

import pytest

from agents_app.conversations.selectors import transcript
from agents_app.conversations.services import conversation_create, message_post
from agents_app.core.errors import DomainError
from agents_app.models import Run
from agents_app.runs.services import run_cancel
from agents_app.worker.execution import execute_run
from tests.support.tools import BrokenTool, EchoTool, make_registry

from .test_chat_answers import SnapshotProvider

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def chat(owner, llm):
    return conversation_create(owner=owner, interface="api")


def answer(run, provider, registry):
    execute_run(run.pk, provider=provider, registry=registry)
    run.refresh_from_db()
    return run


def send(chat, owner, text, **kwargs):
    return message_post(conversation=chat, actor=owner, interface="web", text=text, **kwargs)


def calls_all_answered(messages):
    calls = [
        c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or ()
    ]
    results = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    return sorted(calls) == sorted(results)


def test_a_model_timing_out_fails_the_answer_with_its_reason_and_the_next_one_works(owner, chat):
    provider = SnapshotProvider(
        [
            {"match": "again", "replies": [{"content": "Back."}]},
            {
                "match": "hello",
                "replies": [{"raise": "REQUEST_TIMEOUT", "message": "no answer in 60 s"}],
            },
        ]
    )
    _, run = send(chat, owner, "hello")
    run = answer(run, provider, make_registry())
    assert (run.status, run.error_code, run.error_message) == (
        "failed",
        "REQUEST_TIMEOUT",
        "no answer in 60 s",
    )
    _, again = send(chat, owner, "again")
    assert answer(again, provider, make_registry()).final_response == "Back."


def test_invalid_tool_arguments_from_the_model_are_shown_to_it_and_the_answer_goes_on(owner, chat):
    provider = SnapshotProvider(
        [
            {
                "match": "AGENTDESK:CHAT",
                "replies": [
                    {"tool_calls": [{"name": "echo", "arguments": '{"text": "unclosed'}]},
                    {"tool_calls": [{"name": "echo", "arguments": {"wrong": 1}}]},
                    {"content": "Sorry, I could not echo."},
                ],
            }
        ]
    )
    _, run = send(chat, owner, "echo something")
    run = answer(run, provider, make_registry(EchoTool()))
    assert run.status == "succeeded" and run.final_response == "Sorry, I could not echo."
    results = [json.loads(e.text) for e in transcript(chat) if e.kind == "tool_result"]
    assert "not valid JSON" in results[0]["error"]
    assert "Invalid arguments for tool 'echo'" in results[1]["error"]
    assert all(r.get("note") == "Correct the call, or answer if you cannot." for r in results)


def test_a_failing_tool_is_reported_to_the_model_and_the_answer_goes_on(owner, chat):
    provider = SnapshotProvider(
        [
            {
                "match": "AGENTDESK:CHAT",
                "replies": [{"tool_calls": [{"name": "broken"}]}, {"content": "The tool is down."}],
            }
        ]
    )
    _, run = send(chat, owner, "use the broken tool")
    run = answer(run, provider, make_registry(BrokenTool()))
    assert run.status == "succeeded"
    result = next(e for e in transcript(chat) if e.kind == "tool_result")
    assert result.data["ok"] is False and "broken" in json.loads(result.text)["error"]


def test_past_its_failed_calls_an_answer_is_asked_for_in_words_and_given(owner, chat, settings):
    settings.CHAT_TOOL_ERROR_RETRIES = 1
    broken = {"tool_calls": [{"name": "broken"}]}
    provider = SnapshotProvider(
        [
            {
                "match": "AGENTDESK:CHAT",
                "replies": [broken, broken, broken, {"content": "The tool is broken today."}],
            },
        ]
    )
    _, run = send(chat, owner, "break it")
    run = answer(run, provider, make_registry(BrokenTool()))
    assert (run.status, run.final_response) == ("succeeded", "The tool is broken today.")
    # Offered the tool twice; after the second failure no tool, and a call made anyway is
    # refused without running.
    assert [len(r.tools) for r in provider.requests] == [1, 1, 0, 0]
    results = [json.loads(e.text) for e in transcript(chat) if e.kind == "tool_result"]
    assert [r["note"] for r in results[:2]] == [
        "Correct the call, or answer if you cannot.",
        "No more tool calls: answer the person now, in words.",
    ]
    assert results[2] == {"error": "No more tool calls: answer the person now, in words."}
    assert calls_all_answered(provider.sent[-1])


def test_a_call_repeated_again_and_again_gets_an_answer_in_words(owner, chat):
    echo = {"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]}
    provider = SnapshotProvider(
        [{"match": "AGENTDESK:CHAT", "replies": [echo, echo, echo, {"content": "It says x."}]}]
    )
    _, run = send(chat, owner, "echo x")
    run = answer(run, provider, make_registry(EchoTool()))
    assert (run.status, run.final_response) == ("succeeded", "It says x.")
    assert [len(r.tools) for r in provider.requests] == [1, 1, 1, 0]


def test_an_answer_that_fails_keeps_the_calls_it_made_with_their_results(owner, chat):
    too_long = {"content": "Lorem ipsum", "finish_reason": "length"}
    provider = SnapshotProvider(
        [
            {
                "match": "AGENTDESK:CHAT",
                "replies": [
                    {"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]},
                    too_long,
                    too_long,
                ],
            }
        ]
    )
    _, run = send(chat, owner, "echo then ramble")
    run = answer(run, provider, make_registry(EchoTool()))
    assert (run.status, run.error_code) == ("failed", "ANSWER_TOO_LONG")
    assert [(e.kind, e.text) for e in transcript(chat) if e.kind != "tool_call"] == [
        ("user", "echo then ramble"),
        ("tool_result", '{"echo": "x"}'),
    ]


def test_stop_during_the_models_answer_keeps_what_it_had_said(owner, chat):
    def stopped_midway(request):
        run_cancel(run=Run.objects.get(conversation=chat), actor=owner, interface="web")
        request.on_token("The first half of")
        time.sleep(0.3)  # past the poll interval (worker.hooks.POLL_SECONDS)
        request.interrupt()  # the next poll sees the stop and cuts the stream
        raise AssertionError("the stream should have been cut")

    provider = SnapshotProvider(
        [
            {"match": "go on", "replies": [{"content": "Continuing."}]},
            {"match": "AGENTDESK:CHAT", "replies": [stopped_midway]},
        ]
    )
    _, run = send(chat, owner, "tell me a story")
    run = answer(run, provider, make_registry())
    assert run.status == "cancelled"
    assert [(e.kind, e.text) for e in transcript(chat)] == [
        ("user", "tell me a story"),
        ("assistant", "The first half of …[stopped]"),
    ]
    _, again = send(chat, owner, "go on")
    assert answer(again, provider, make_registry()).status == "succeeded"


@pytest.mark.parametrize(
    ("text", "mode", "field"),
    [("", None, "text"), (42, None, "text"), ("hi\x00", None, "text"), ("hi", "shout", "mode")],
)
def test_a_malformed_message_is_refused_with_the_field_named(owner, chat, text, mode, field):
    with pytest.raises(DomainError) as refused:
        send(chat, owner, text, mode=mode)
    assert refused.value.code == "VALIDATION_ERROR"
    assert refused.value.details["field"] == field
    assert not transcript(chat)


def test_an_answer_past_its_tool_call_budget_keeps_the_calls_it_made(owner, chat, settings):
    settings.RUN_MAX_TOOL_CALLS = 1
    provider = SnapshotProvider(
        [
            {
                "match": "AGENTDESK:CHAT",
                "replies": [
                    {"tool_calls": [{"name": "echo", "arguments": {"text": "one"}}]},
                    {"tool_calls": [{"name": "echo", "arguments": {"text": "two"}}]},
                ],
            }
        ]
    )
    _, run = send(chat, owner, "echo twice")

    run = answer(run, provider, make_registry(EchoTool()))

    assert (run.status, run.error_code) == ("failed", "BUDGET_EXCEEDED")
    kept = [(e.kind, e.text) for e in transcript(chat) if e.kind != "tool_call"]
    # The refused call is closed with its reason, so the transcript replays whole.
    assert kept == [
        ("user", "echo twice"),
        ("tool_result", '{"echo": "one"}'),
        ("tool_result", '{"error": "BUDGET_EXCEEDED: The run reached its budget of 1 tool calls"}'),
    ]
