"""The JSON shapes of conversations, and seed 002's rule for a tool call shown in the chat: its
name and arguments cut to 80 characters with "…", expandable to the full call."""

import json

import pytest

from agents_app.conversations.presenters import call_summary, conversation_payload, entry_payload
from agents_app.conversations.selectors import answer_running, waiting_messages
from agents_app.conversations.services import conversation_create, message_post
from agents_app.models import LLMConnection


def arguments_of_length(n: int, char: str = "a") -> dict:
    """Arguments whose JSON is exactly `n` characters: {"t": "aaa…"} is 9 + len(value)."""
    arguments = {"t": char * (n - 9)}
    assert len(json.dumps(arguments, ensure_ascii=False)) == n
    return arguments


@pytest.mark.parametrize("length", [79, 80])
def test_arguments_of_at_most_80_characters_are_shown_whole(length):
    arguments = arguments_of_length(length)

    short, full = call_summary("write_file", arguments)

    assert short == full == f"write_file({json.dumps(arguments)})"
    assert "…" not in short


def test_arguments_of_81_characters_are_cut_at_80_with_an_ellipsis():
    arguments = arguments_of_length(81)
    text = json.dumps(arguments)

    short, full = call_summary("write_file", arguments)

    assert short == f"write_file({text[:80]}…)"
    assert full == f"write_file({text})"
    assert len(short) == len("write_file()") + 80 + 1


@pytest.mark.parametrize("char", ["é", "日", "🦀"])
def test_the_cut_counts_characters_not_bytes_and_never_splits_one(char):
    at_limit = arguments_of_length(80, char)
    over = arguments_of_length(81, char)

    short_at, full_at = call_summary("echo", at_limit)
    short_over, full_over = call_summary("echo", over)

    assert short_at == full_at == f"echo({json.dumps(at_limit, ensure_ascii=False)})"
    assert short_over == f"echo({json.dumps(over, ensure_ascii=False)[:80]}…)"
    # Cut inside the value, the last character kept is a whole one.
    assert call_summary("echo", arguments_of_length(85, char))[0].endswith(f"{char}…)")
    assert char in full_over and "\\u" not in full_over


def test_unparsed_arguments_are_shown_as_the_model_sent_them():
    short, full = call_summary("echo", '{"text": ')

    assert short == full == 'echo({"text": )'


@pytest.mark.django_db
def test_a_conversation_shows_its_connection_running_answer_and_waiting_messages(owner, llm):
    chat = conversation_create(owner=owner, interface="api", title="Plans")
    first, run = message_post(conversation=chat, actor=owner, interface="api", text="one")
    queued, _ = message_post(conversation=chat, actor=owner, interface="api", text="two")
    chat.refresh_from_db()

    payload = conversation_payload(
        chat, running=answer_running(chat), waiting=waiting_messages(chat)
    )

    assert payload["connection"] is None  # the default, followed as staff change it
    assert payload["running_answer"] == {"run_id": run.pk, "status": "queued"}
    assert [(e["id"], e["seq"], e["text"]) for e in payload["waiting"]] == [
        (queued.pk, None, "two")
    ]
    assert (payload["title"], payload["double_texting"], payload["entry_seq"]) == (
        "Plans",
        "enqueue",
        1,
    )
    first.refresh_from_db()
    assert entry_payload(first) == {
        "seq": 1,
        "id": first.pk,
        "kind": "user",
        "text": "one",
        "data": {},
        "run_id": run.pk,
        "turn": None,
        "mode": "enqueue",
        "delivered_at_turn": None,
        "created_at": first.created_at.isoformat(),
    }


@pytest.mark.django_db
def test_a_conversation_on_a_chosen_connection_names_it_and_its_model(owner, llm):
    hosted = LLMConnection.objects.create(
        name="hosted", base_url="https://api.example/v1", model="big"
    )
    chat = conversation_create(owner=owner, interface="api", connection="hosted")

    payload = conversation_payload(chat)

    assert payload["connection"] == {"id": hosted.pk, "name": "hosted", "model": "big"}
    assert payload["running_answer"] is None and payload["waiting"] == []
