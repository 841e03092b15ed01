"""Chat answers driven through the database with an in-process scripted LLM (no Celery): each
answer is a run of the one engine; the transcript is typed rows replayed as OpenAI messages;
messages sent mid-answer follow the conversation's double-texting mode."""

import copy
import json

import pytest

from agents_app.conversations.selectors import transcript, waiting_messages
from agents_app.conversations.services import (
    conversation_create,
    conversation_stop,
    message_post,
)
from agents_app.core.errors import DomainError
from agents_app.models import Run, RunEvent
from agents_app.runs.services import run_cancel
from agents_app.worker.execution import execute_run
from tests.support.script import tool_call
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import EchoTool, make_registry
from tools_app.registry import Tool, ToolResult, ToolSpec

pytestmark = pytest.mark.django_db(transaction=True)


class SnapshotProvider(ScriptedProvider):
    """Keeps a copy of each request's messages as sent (the engine goes on appending)."""

    def __init__(self, rules):
        super().__init__(rules)
        self.sent: list[list[dict]] = []

    def complete(self, request):
        self.sent.append(copy.deepcopy(request.messages))
        return super().complete(request)


class HookTool(Tool):
    """Calls `action` when the model calls it: something a person does mid-answer."""

    spec = ToolSpec(
        name="hook",
        description="Does a thing.",
        input_schema={"type": "object", "properties": {}, "additionalProperties": False},
        capabilities=frozenset({"TEST"}),
        domain="testing",
    )

    def __init__(self, action):
        self.action = action

    def run(self, arguments, context):
        self.action()
        return ToolResult(ok=True, content={"done": True})


def rows(conversation):
    return [
        (e.kind, e.text if e.kind != "tool_call" else e.data["wire_name"])
        for e in transcript(conversation)
    ]


def answer(run, provider, registry):
    execute_run(run.pk, provider=provider, registry=registry)
    run.refresh_from_db()
    return run


@pytest.fixture
def chat(owner, llm):
    return conversation_create(owner=owner, interface="api")


def test_an_answer_calls_tools_then_answers_and_the_transcript_keeps_every_row(owner, chat):
    _, run = message_post(conversation=chat, actor=owner, interface="api", text="Echo hi")
    provider = SnapshotProvider(
        [
            {
                "match": "AGENTDESK:CHAT",
                "replies": [
                    {**tool_call("echo", text="hi"), "reasoning": "I should echo."},
                    {"content": "It said **hi**.", "reasoning": "Done."},
                ],
            }
        ]
    )
    run = answer(run, provider, make_registry(EchoTool()))
    assert (run.kind, run.status) == ("chat", "succeeded")
    assert run.final_response == "It said **hi**."
    assert rows(chat) == [
        ("user", "Echo hi"),
        ("reasoning", "I should echo."),
        ("tool_call", "echo"),
        ("tool_result", '{"echo": "hi"}'),
        ("reasoning", "Done."),
        ("assistant", "It said **hi**."),
    ]
    # No finish_task in a chat, and the second request carries the call and its result.
    assert [t.name for t in provider.requests[0].tools] == ["echo"]
    second = provider.sent[1]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool"]
    assert second[2]["tool_calls"][0]["function"]["name"] == "echo"


def test_the_next_answer_replays_the_transcript_as_the_model_first_saw_it(owner, chat):
    provider = SnapshotProvider(
        [
            {"match": "second", "replies": [{"content": "Second answer."}]},
            {
                "match": "AGENTDESK:CHAT",
                "replies": [tool_call("echo", text="x"), {"content": "First answer."}],
            },
        ]
    )
    registry = make_registry(EchoTool())
    _, first = message_post(conversation=chat, actor=owner, interface="api", text="first")
    answer(first, provider, registry)
    _, second = message_post(conversation=chat, actor=owner, interface="api", text="second")
    answer(second, provider, registry)
    sent_first_turn_two = provider.sent[1]
    replayed = provider.sent[2]
    # Everything the first answer said and heard, then its answer, then the new message.
    assert replayed[: len(sent_first_turn_two)] == sent_first_turn_two
    assert replayed[len(sent_first_turn_two) :] == [
        {"role": "assistant", "content": "First answer."},
        {"role": "user", "content": "second"},
    ]


@pytest.mark.dialect
def test_a_message_sent_while_an_answer_runs_is_answered_next_by_default(owner, chat):
    _, first = message_post(conversation=chat, actor=owner, interface="api", text="one")
    queued, started = message_post(conversation=chat, actor=owner, interface="api", text="two")
    assert started is None and queued.seq is None
    assert [e.text for e in waiting_messages(chat)] == ["two"]
    provider = SnapshotProvider(
        [
            {"match": "two", "replies": [{"content": "Answer two."}]},
            {"match": "one", "replies": [{"content": "Answer one."}]},
        ]
    )
    answer(first, provider, make_registry())
    queued.refresh_from_db()
    second = queued.run
    assert second is not None and second.pk != first.pk and second.status == "queued"
    answer(second, provider, make_registry())
    assert rows(chat) == [
        ("user", "one"),
        ("assistant", "Answer one."),
        ("user", "two"),
        ("assistant", "Answer two."),
    ]


def test_reject_refuses_a_message_while_an_answer_runs_and_stores_nothing(owner, chat):
    message_post(conversation=chat, actor=owner, interface="api", text="one")
    with pytest.raises(DomainError) as refused:
        message_post(conversation=chat, actor=owner, interface="api", text="two", mode="reject")
    assert refused.value.code == "CONFLICT"
    assert [e.text for e in transcript(chat)] == ["one"] and waiting_messages(chat) == []


@pytest.mark.dialect
def test_interrupt_cancels_the_running_answer_and_answers_the_new_message(owner, chat):
    holder = {}

    def interrupt():
        holder["entry"], _ = message_post(
            conversation=chat, actor=owner, interface="api", text="stop, do this", mode="interrupt"
        )

    provider = SnapshotProvider(
        [
            {"match": "stop, do this", "replies": [{"content": "Doing this."}]},
            {
                "match": "AGENTDESK:CHAT",
                "replies": [
                    {"tool_calls": [{"name": "hook"}, {"name": "echo", "arguments": {"text": "b"}}]}
                ],
            },
        ]
    )
    registry = make_registry(HookTool(interrupt), EchoTool())
    _, first = message_post(conversation=chat, actor=owner, interface="api", text="long job")
    answer(first, provider, registry)
    assert (first.status, first.error_code) == ("cancelled", "CANCELLED")
    entry = holder["entry"]
    entry.refresh_from_db()
    second = answer(entry.run, provider, registry)
    assert second.status == "succeeded"
    # The cut answer's second call never ran: its result says so; no call lacks a result.
    assert rows(chat) == [
        ("user", "long job"),
        ("tool_call", "hook"),
        ("tool_call", "echo"),
        ("tool_result", '{"done": true}'),
        ("tool_result", '{"error": "Stopped before this call returned."}'),
        ("user", "stop, do this"),
        ("assistant", "Doing this."),
    ]
    sent = provider.sent[-1]
    calls = [c["id"] for m in sent if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    results = [m["tool_call_id"] for m in sent if m["role"] == "tool"]
    assert sorted(calls) == sorted(results)


@pytest.mark.dialect
def test_steer_delivers_the_message_into_the_running_answer_at_its_next_turn(owner, chat):
    def steer():
        message_post(
            conversation=chat, actor=owner, interface="api", text="use uppercase", mode="steer"
        )

    provider = SnapshotProvider(
        [{"match": "AGENTDESK:CHAT", "replies": [tool_call("hook"), {"content": "OK, UPPER."}]}]
    )
    _, run = message_post(conversation=chat, actor=owner, interface="api", text="write")
    run = answer(run, provider, make_registry(HookTool(steer)))
    assert run.status == "succeeded"
    assert provider.sent[1][-1] == {"role": "user", "content": "use uppercase"}
    assert rows(chat) == [
        ("user", "write"),
        ("tool_call", "hook"),
        ("tool_result", '{"done": true}'),
        ("user", "use uppercase"),
        ("assistant", "OK, UPPER."),
    ]
    steered = transcript(chat)[3]
    assert (steered.run_id, steered.delivered_at_turn, steered.mode) == (run.pk, 1, "steer")
    event = RunEvent.objects.get(run=run, type="message_steered")
    assert event.payload["turn"] == 1 and event.payload["entry_id"] == steered.pk
    # Delivered, not answered again.
    assert Run.objects.filter(conversation=chat).count() == 1


@pytest.mark.dialect
def test_a_steer_that_arrives_during_the_last_turn_is_answered_next(owner, chat):
    def steer_then_answer(request):
        message_post(conversation=chat, actor=owner, interface="api", text="two", mode="steer")
        return {"content": "Answer one."}

    provider = SnapshotProvider(
        [
            {"match": "two", "replies": [{"content": "Answer two."}]},
            {"match": "one", "replies": [steer_then_answer]},
        ]
    )
    _, run = message_post(conversation=chat, actor=owner, interface="api", text="one")
    answer(run, provider, make_registry())
    late = waiting_messages(chat) or transcript(chat)[-1:]
    assert late[0].text == "two" and late[0].delivered_at_turn is None
    assert late[0].run_id != run.pk and late[0].run.status == "queued"
    answer(late[0].run, provider, make_registry())
    assert rows(chat) == [
        ("user", "one"),
        ("assistant", "Answer one."),
        ("user", "two"),
        ("assistant", "Answer two."),
    ]


@pytest.mark.dialect
def test_stop_ends_the_answer_and_keeps_the_waiting_messages_unanswered(owner, chat):
    _, run = message_post(conversation=chat, actor=owner, interface="api", text="one")
    message_post(conversation=chat, actor=owner, interface="api", text="two")
    stopped = conversation_stop(conversation=chat, actor=owner, interface="api")
    assert stopped.pk == run.pk
    run.refresh_from_db()
    assert run.status == "cancelled"
    held = transcript(chat)[-1]
    assert (held.text, held.data["held"]) == ("two", "stopped before it was answered")
    assert Run.objects.filter(conversation=chat).count() == 1 and waiting_messages(chat) == []


def test_a_failed_answer_leaves_the_conversation_usable(owner, chat):
    _, run = message_post(conversation=chat, actor=owner, interface="api", text="one")
    provider = SnapshotProvider(
        [
            {"match": "two", "replies": [{"content": "Fine now."}]},
            {"match": "one", "replies": [{"raise": "CONNECTION_REFUSED", "message": "down"}]},
        ]
    )
    run = answer(run, provider, make_registry())
    assert (run.status, run.error_code) == ("failed", "CONNECTION_REFUSED")
    _, again = message_post(conversation=chat, actor=owner, interface="api", text="two")
    assert answer(again, provider, make_registry()).status == "succeeded"
    assert [m["role"] for m in provider.sent[-1]] == ["system", "user", "user"]


def test_a_cancel_between_two_calls_closes_the_second_with_a_result(owner, chat):
    def cancel():
        run_cancel(run=Run.objects.get(conversation=chat), actor=owner, interface="api")

    provider = SnapshotProvider(
        [
            {
                "match": "AGENTDESK:CHAT",
                "replies": [
                    {"tool_calls": [{"name": "hook"}, {"name": "echo", "arguments": {"text": "b"}}]}
                ],
            }
        ]
    )
    _, run = message_post(conversation=chat, actor=owner, interface="api", text="go")
    run = answer(run, provider, make_registry(HookTool(cancel), EchoTool()))
    assert run.status == "cancelled"
    results = [json.loads(e.text) for e in transcript(chat) if e.kind == "tool_result"]
    assert results == [{"done": True}, {"error": "Stopped before this call returned."}]
