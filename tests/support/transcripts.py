"""Transcripts written straight as rows (what earlier answers would have left), and the hooks
an engine call needs when a test drives conversations.condense without a worker."""

from django.db import transaction

from agents_app.conversations.transcript import place
from agents_app.engine.llm import Usage
from agents_app.models import Conversation, ConversationEntry, EntryKind


def exchange(
    conversation: Conversation,
    ask: str,
    *,
    calls: tuple[tuple[str, dict, str], ...] = (),
    answer: str = "",
    reuse_ids: bool = False,
) -> list[ConversationEntry]:
    """One past exchange placed at the end of the transcript: the person's message, the
    assistant's calls `(tool, arguments, output)` in one turn, each result after them, then the
    answer in the next turn. Call ids are unique in the conversation, or with `reuse_ids`
    call_0, call_1, … in every exchange (as some servers number them)."""
    first = ConversationEntry.objects.filter(conversation=conversation).count()
    rows = [ConversationEntry(conversation=conversation, kind=EntryKind.USER, text=ask)]
    ids = [f"call_{i}" if reuse_ids else f"call_{first}_{i}" for i in range(len(calls))]
    for call_id, (tool, arguments, _) in zip(ids, calls, strict=True):
        rows.append(
            ConversationEntry(
                conversation=conversation,
                kind=EntryKind.TOOL_CALL,
                turn=0,
                data={"call_id": call_id, "wire_name": tool, "arguments": arguments},
            )
        )
    for call_id, (tool, _, output) in zip(ids, calls, strict=True):
        rows.append(
            ConversationEntry(
                conversation=conversation,
                kind=EntryKind.TOOL_RESULT,
                text=output,
                data={"call_id": call_id, "wire_name": tool, "ok": True},
            )
        )
    if answer:
        rows.append(
            ConversationEntry(
                conversation=conversation, kind=EntryKind.ASSISTANT, text=answer, turn=1
            )
        )
    with transaction.atomic():
        place(rows, conversation.pk)
    return rows


class RecordingHooks:
    """The engine hooks condense uses: usage is recorded, nothing stops the answer."""

    def __init__(self) -> None:
        self.usage: list[tuple[Usage, str]] = []

    def checkpoint(self) -> None:
        pass

    def poll(self) -> None:
        pass

    def on_llm_usage(self, usage: Usage, model: str) -> None:
        self.usage.append((usage, model))
