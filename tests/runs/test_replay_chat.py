"""A chat answer with tool calls replayed (issue 36, item 4): its input is its conversation's
transcript as it stood, so the replay answers in a copy of it and never writes into the
person's conversation; a message steered into it is steered into the replay at the same turn."""

import pytest

from agents_app.conversations.services import conversation_create, message_post
from agents_app.models import Conversation, ConversationEntry
from agents_app.worker.execution import execute_run
from tests.support.replays import divergences, no_model, replayed
from tests.support.script import tool_call
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import EchoTool, make_registry
from tools_app.registry import Tool, ToolResult, ToolSpec

pytestmark = pytest.mark.django_db(transaction=True)

SCRIPT = [
    {
        "match": "AGENTDESK:CHAT",
        "replies": [
            {"content": "Hello."},
            tool_call("echo", text="hi"),
            {"content": "It said **hi**."},
        ],
    }
]


def transcript(conversation) -> list[tuple]:
    return list(
        ConversationEntry.objects.filter(conversation=conversation, seq__isnull=False)
        .order_by("seq")
        .values_list("seq", "kind", "text")
    )


def test_a_chat_answer_replays_in_a_copy_of_its_conversation(owner, llm, monkeypatch):
    registry = make_registry(EchoTool())
    provider = ScriptedProvider(SCRIPT)
    chat = conversation_create(owner=owner, interface="api")
    _, first = message_post(conversation=chat, actor=owner, interface="api", text="Hi there")
    execute_run(first.pk, provider=provider, registry=registry)
    _, answer = message_post(conversation=chat, actor=owner, interface="api", text="Echo hi")
    execute_run(answer.pk, provider=provider, registry=registry)
    answer.refresh_from_db()
    assert answer.status == "succeeded", answer.error_message
    before = transcript(chat)
    no_model(monkeypatch)

    replay = replayed(answer, registry=registry)

    assert divergences(replay) == []
    assert (replay.kind, replay.status, replay.final_response) == (
        "chat",
        "succeeded",
        "It said **hi**.",
    )
    assert transcript(chat) == before  # the person's conversation is as it was
    copy = Conversation.objects.get(pk=replay.conversation_id)
    assert copy.pk != chat.pk and copy.owner == owner and not copy.is_open
    assert copy.title == f"Replay of run {answer.pk}"
    # The copy holds what the answer read, then what its replay said: what the answer said.
    assert [row[1:] for row in transcript(copy)] == [row[1:] for row in before]


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


@pytest.mark.dialect
def test_a_message_steered_into_the_answer_is_steered_into_its_replay_at_the_same_turn(
    owner, llm, monkeypatch
):
    chat = conversation_create(owner=owner, interface="api")
    person = []  # the person writes while the answer's tool runs, once

    def steer():
        if not person:
            person.append(
                message_post(
                    conversation=chat, actor=owner, interface="api", text="in caps", mode="steer"
                )
            )

    registry = make_registry(HookTool(steer))
    provider = ScriptedProvider(
        [{"match": "AGENTDESK:CHAT", "replies": [tool_call("hook"), {"content": "OK, CAPS."}]}]
    )
    _, answer = message_post(conversation=chat, actor=owner, interface="api", text="write")
    execute_run(answer.pk, provider=provider, registry=registry)
    answer.refresh_from_db()
    steered = ConversationEntry.objects.get(conversation=chat, text="in caps")
    assert (steered.run_id, steered.delivered_at_turn) == (answer.pk, 1)
    before = transcript(chat)
    no_model(monkeypatch)

    replay = replayed(answer, registry=registry)

    assert divergences(replay) == []  # its second request holds the message, as the source's
    assert replay.final_response == "OK, CAPS."
    again = ConversationEntry.objects.get(conversation_id=replay.conversation_id, text="in caps")
    assert (again.run_id, again.delivered_at_turn) == (replay.pk, 1)
    assert [row[1:] for row in transcript(again.conversation)] == [row[1:] for row in before]
    assert transcript(chat) == before and len(person) == 1
