"""Reads of conversations, always scoped to their owner."""

from typing import Any

from django.db.models import QuerySet

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.models import (
    TERMINAL_STATUSES,
    Conversation,
    ConversationEntry,
    Run,
)


def conversations_for(user: Any) -> QuerySet[Conversation]:
    """The user's chats. A contract agent's attempt keeps its transcript in a conversation
    too; it is read through its agent (contracts.selectors), and no message may be posted."""
    return Conversation.objects.filter(owner=user, agent__isnull=True).select_related("connection")


def conversation_get(*, user: Any, conversation_id: int) -> Conversation:
    """The user's conversation, or DomainError NOT_FOUND (also for another user's)."""
    conversation = conversations_for(user).filter(pk=conversation_id).first()
    if conversation is None:
        raise DomainError(
            ErrorCode.NOT_FOUND,
            f"Conversation {conversation_id} not found",
            {"conversation_id": conversation_id},
        )
    return conversation


def answer_running(conversation: Conversation) -> Run | None:
    """The answer not yet ended (at most one: a new one starts only when it ends)."""
    return (
        Run.objects.filter(conversation=conversation)
        .exclude(status__in=TERMINAL_STATUSES)
        .order_by("-id")
        .first()
    )


def entries_after(
    conversation: Conversation, *, after: int = 0, limit: int = 500
) -> list[ConversationEntry]:
    """Transcript rows with seq > `after`, in order."""
    return list(
        ConversationEntry.objects.filter(conversation=conversation, seq__gt=after).order_by("seq")[
            :limit
        ]
    )


def transcript(conversation: Conversation) -> list[ConversationEntry]:
    return list(
        ConversationEntry.objects.filter(conversation=conversation, seq__isnull=False).order_by(
            "seq"
        )
    )


def waiting_messages(conversation: Conversation) -> list[ConversationEntry]:
    """The person's messages not yet in the transcript (queued or being steered in)."""
    return list(
        ConversationEntry.objects.filter(
            conversation=conversation, kind="user", seq__isnull=True
        ).order_by("id")
    )


def conversation_states(
    conversations: list[Conversation],
) -> dict[int, tuple[Run | None, list[ConversationEntry]]]:
    """For a page of conversations, in two queries: each one's running answer and waiting
    messages (what answer_running and waiting_messages give for one)."""
    ids = [c.pk for c in conversations]
    running: dict[int, Run] = {}
    for run in (
        Run.objects.filter(conversation_id__in=ids)
        .exclude(status__in=TERMINAL_STATUSES)
        .order_by("id")
    ):
        running[run.conversation_id] = run  # the newest wins, as in answer_running
    waiting: dict[int, list[ConversationEntry]] = {pk: [] for pk in ids}
    for entry in ConversationEntry.objects.filter(
        conversation_id__in=ids, kind="user", seq__isnull=True
    ).order_by("id"):
        waiting[entry.conversation_id].append(entry)
    return {pk: (running.get(pk), waiting[pk]) for pk in ids}
