"""Conversations for the chat page's tests: transcript rows placed as an answer places them,
and the pieces of a tab's HTML."""

import re
from typing import Any

from django.db import transaction

from agents_app.conversations.transcript import place
from agents_app.models import Conversation, ConversationEntry, Run


def add_rows(
    conversation: Conversation,
    rows: list[tuple[str, str, dict[str, Any]]],
    *,
    run: Run | None = None,
    **fields: Any,
) -> list[ConversationEntry]:
    """`(kind, text, data)` rows at the end of the transcript, written by `run`."""
    entries = [
        ConversationEntry(
            conversation=conversation, kind=kind, text=text, data=data, run=run, **fields
        )
        for kind, text, data in rows
    ]
    with transaction.atomic():
        place(entries, conversation.pk)
    return entries


def class_blocks(html: str, tag: str, css_class: str) -> list[str]:
    """The inner HTML of each `<tag class="... css_class ...">`, up to its first closing tag
    (enough for the flat elements the tests read: answers, reasoning, calls)."""
    pattern = rf'<{tag}\b[^>]*class="[^"]*\b{re.escape(css_class)}\b[^"]*"[^>]*>(.*?)</{tag}>'
    return re.findall(pattern, html, re.DOTALL)
