"""The conversation tools over MCP: the same services, shapes, ownership and errors as
/api/v1/conversations. No worker runs: an answer started stays queued."""

import pytest

from agents_app.models import Conversation, ConversationEntry, Run
from tests.api.mcp_server.test_tools import error_of

pytestmark = pytest.mark.django_db(transaction=True)


def created(client, **arguments) -> dict:
    result = client.call("create_conversation", arguments)
    assert not result.is_error, result
    return result.structured_content


def test_a_conversation_is_created_sent_to_and_read_after_a_seq(owner_mcp, owner):
    chat = created(owner_mcp, title="Trip", double_texting="steer")

    first = owner_mcp.call("send_message", {"conversation_id": chat["id"], "text": "Plan it"})
    second = owner_mcp.call(
        "send_message", {"conversation_id": chat["id"], "text": "by train", "mode": "enqueue"}
    )
    read = owner_mcp.call("read_conversation", {"conversation_id": chat["id"], "after": 0})

    conversation = Conversation.objects.get()
    assert (conversation.owner, conversation.title, conversation.double_texting) == (
        owner,
        "Trip",
        "steer",
    )
    run = Run.objects.get()
    assert first.structured_content["outcome"] == "answered"
    assert first.structured_content["run_id"] == run.pk
    assert first.structured_content["entry"]["seq"] == 1
    assert (second.structured_content["outcome"], second.structured_content["run_id"]) == (
        "queued",
        None,
    )
    transcript = read.structured_content
    assert [(e["seq"], e["text"]) for e in transcript["entries"]] == [(1, "Plan it")]
    assert transcript["last_seq"] == 1 and transcript["has_more"] is False
    assert transcript["running_answer"] == {"run_id": run.pk, "status": "queued"}
    assert [e["text"] for e in transcript["waiting"]] == ["by train"]
    later = owner_mcp.call("read_conversation", {"conversation_id": chat["id"], "after": 1})
    assert later.structured_content["entries"] == []


def test_list_conversations_shows_only_the_keys_users(owner_mcp, outsider_mcp):
    created(owner_mcp, title="mine")
    created(outsider_mcp, title="theirs")

    listed = owner_mcp.call("list_conversations", {}).structured_content

    assert listed["count"] == 1
    assert [c["title"] for c in listed["results"]] == ["mine"]


def test_stop_cancels_the_running_answer(owner_mcp):
    chat = created(owner_mcp)
    run_id = owner_mcp.call(
        "send_message", {"conversation_id": chat["id"], "text": "go"}
    ).structured_content["run_id"]

    stopped = owner_mcp.call("stop_conversation", {"conversation_id": chat["id"]})

    assert stopped.structured_content["stopped_run_id"] == run_id
    assert stopped.structured_content["conversation"]["running_answer"] is None
    assert Run.objects.get().status == "cancelled"


def test_under_reject_a_message_during_an_answer_is_a_conflict(owner_mcp):
    chat = created(owner_mcp, double_texting="reject")
    owner_mcp.call("send_message", {"conversation_id": chat["id"], "text": "one"})

    error = error_of(owner_mcp.call("send_message", {"conversation_id": chat["id"], "text": "two"}))

    assert (error["code"], error["http_status"]) == ("CONFLICT", 409)
    assert ConversationEntry.objects.count() == 1


@pytest.mark.parametrize(
    "tool, arguments",
    [
        ("send_message", {"text": "hi"}),
        ("read_conversation", {}),
        ("stop_conversation", {}),
    ],
)
def test_another_users_conversation_is_not_found(owner_mcp, outsider_mcp, tool, arguments):
    chat = created(owner_mcp)
    owner_mcp.call("send_message", {"conversation_id": chat["id"], "text": "secret"})

    error = error_of(outsider_mcp.call(tool, {"conversation_id": chat["id"], **arguments}))

    assert (error["code"], error["http_status"]) == ("NOT_FOUND", 404)
    assert ConversationEntry.objects.count() == 1
    assert Run.objects.get().status == "queued"


@pytest.mark.parametrize(
    "tool, arguments, field",
    [
        ("create_conversation", {"double_texting": "shout"}, "double_texting"),
        ("create_conversation", {"title": "x" * 201}, "title"),
        ("send_message", {"conversation_id": 1, "text": "  "}, "text"),
        ("send_message", {"conversation_id": 1, "text": "hi", "mode": "whisper"}, "mode"),
        ("send_message", {"conversation_id": 2**63, "text": "hi"}, "conversation_id"),
        ("read_conversation", {"conversation_id": 1, "after": -1}, "after"),
        ("read_conversation", {"conversation_id": 1, "limit": 1001}, "limit"),
    ],
)
def test_bad_arguments_are_a_validation_error_naming_them(owner_mcp, tool, arguments, field):
    error = error_of(owner_mcp.call(tool, arguments))

    assert error["code"] == "VALIDATION_ERROR"
    assert [e["field"] for e in error["details"]["errors"]] == [field]
    assert not ConversationEntry.objects.exists()


def test_an_unknown_connection_is_a_validation_error(owner_mcp):
    error = error_of(owner_mcp.call("create_conversation", {"connection": "nope"}))

    assert (error["code"], error["details"]["field"]) == ("VALIDATION_ERROR", "connection")
    assert not Conversation.objects.exists()
