"""Every JSON shape of a conversation, built once: a transcript row, a conversation with its
running answer and waiting messages, and a tool call as the chat shows it. REST, MCP, the
WebSocket streams and the chat page all use these."""

import json
from collections.abc import Iterable
from typing import Any

from agents_app.conversations import selectors
from agents_app.conversations.outcomes import MessageOutcome, message_outcome_of
from agents_app.models import Conversation, ConversationEntry, Run

# Seed 002: "each tool call shows its name and arguments cut to 80 characters with '…'".
CALL_ARGUMENTS_CHARS = 80
ELLIPSIS = "…"


def entry_payload(entry: ConversationEntry) -> dict[str, Any]:
    """One transcript row (or a waiting message: seq null)."""
    return {
        "seq": entry.seq,
        "id": entry.pk,
        "kind": entry.kind,
        "text": entry.text,
        "data": entry.data,
        "run_id": entry.run_id,
        "turn": entry.turn,
        "mode": entry.mode,
        "delivered_at_turn": entry.delivered_at_turn,
        "created_at": entry.created_at.isoformat(),
    }


def answer_payload(run: Run | None) -> dict[str, Any] | None:
    """The running answer as {run_id, status}, or None when none runs."""
    return None if run is None else {"run_id": run.pk, "status": run.status}


def conversation_payload(
    conversation: Conversation,
    *,
    running: Run | None = None,
    waiting: Iterable[ConversationEntry] = (),
) -> dict[str, Any]:
    """A conversation with its connection (null: the default one), the answer running (give
    it, or null) and the person's messages waiting for a place in the transcript."""
    connection = conversation.connection
    return {
        "id": conversation.pk,
        "title": conversation.title,
        "connection": (
            None
            if connection is None
            else {"id": connection.pk, "name": connection.name, "model": connection.model}
        ),
        "double_texting": conversation.double_texting,
        "instructions": conversation.instructions,
        "is_open": conversation.is_open,
        "entry_seq": conversation.entry_seq,
        "running_answer": answer_payload(running),
        "waiting": [entry_payload(e) for e in waiting],
        "created_at": conversation.created_at.isoformat(),
        "updated_at": conversation.updated_at.isoformat(),
    }


def call_summary(tool_name: str, arguments: Any) -> tuple[str, str]:
    """A tool call as `name(arguments JSON)`: (short, full). The short one cuts the arguments
    at 80 characters (code points, so "é" counts once) and marks the cut with "…"."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    full = f"{tool_name}({text})"
    if len(text) <= CALL_ARGUMENTS_CHARS:
        return full, full
    return f"{tool_name}({text[:CALL_ARGUMENTS_CHARS]}{ELLIPSIS})", full


def conversation_now(conversation: Conversation) -> dict[str, Any]:
    """A conversation as it is now, with its running answer and waiting messages."""
    return conversation_payload(
        conversation,
        running=selectors.answer_running(conversation),
        waiting=selectors.waiting_messages(conversation),
    )


def conversations_now(conversations: list[Conversation]) -> list[dict[str, Any]]:
    """Many conversations as they are now, their answers and waiting messages read at once."""
    states = selectors.conversation_states(conversations)
    return [
        conversation_payload(c, running=states[c.pk][0], waiting=states[c.pk][1])
        for c in conversations
    ]


def transcript_after(conversation: Conversation, *, after: int, limit: int) -> dict[str, Any]:
    """The transcript after `after`, with what still runs and waits (REST and MCP)."""
    entries = selectors.entries_after(conversation, after=after, limit=limit + 1)
    has_more = len(entries) > limit
    entries = entries[:limit]
    return {
        "conversation_id": conversation.pk,
        "entries": [entry_payload(e) for e in entries],
        "last_seq": entries[-1].seq if entries else after,
        "has_more": has_more,
        "running_answer": answer_payload(selectors.answer_running(conversation)),
        "waiting": [entry_payload(e) for e in selectors.waiting_messages(conversation)],
    }


def message_outcome(entry: ConversationEntry, run: Run | None) -> MessageOutcome:
    """What became of a message sent: answered (`run` started for it), steered or queued."""
    return message_outcome_of(mode=entry.mode, answered=run is not None)
