"""A conversation and its transcript. Each answer to a person's message is a Run (kind `chat`)
of the one engine; the transcript is the typed rows the answers append, in `seq` order."""

from django.conf import settings
from django.db import models
from django.utils import timezone


class DoubleTexting(models.TextChoices):
    """What a message sent while an answer is running does."""

    ENQUEUE = "enqueue"  # answered next, after the running answer
    REJECT = "reject"  # refused with 409 CONFLICT
    INTERRUPT = "interrupt"  # the running answer stops at its next checkpoint; this one follows
    STEER = "steer"  # delivered into the running answer at its next step boundary


class Conversation(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations"
    )
    title = models.CharField(max_length=200, blank=True)
    # The LLM connection its answers use; null: the default at the time of each answer.
    connection = models.ForeignKey(
        "agents_app.LLMConnection",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="conversations",
    )
    double_texting = models.CharField(
        max_length=10, choices=DoubleTexting.choices, default=DoubleTexting.ENQUEUE
    )
    # The person's standing instructions: sent with every answer, never condensed.
    instructions = models.TextField(blank=True)
    # A contract agent's attempt: its transcript is a conversation of its own, not a chat tab.
    agent = models.ForeignKey(
        "agents_app.ContractAgent",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="attempts",
    )
    # Shown as a tab on the chat page until the person closes it (the history stays).
    is_open = models.BooleanField(default=True)
    # Last ConversationEntry.seq; advanced under the conversation's row lock (gapless).
    entry_seq = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-updated_at", "-id"]
        indexes = [models.Index(fields=["owner", "-updated_at"])]

    def __str__(self) -> str:
        return self.title or f"Conversation {self.pk}"


class EntryKind(models.TextChoices):
    USER = "user"  # what the person typed
    ASSISTANT = "assistant"  # the model's text
    REASONING = "reasoning"  # the model's thinking, shown apart, never sent back as the answer
    TOOL_CALL = "tool_call"  # data: {call_id, tool, arguments}
    TOOL_RESULT = "tool_result"  # data: {call_id, tool, ok}; text: what the model was shown
    CONDENSATION = "condensation"  # data: {first_seq, last_seq, masked | summary}


class ConversationEntry(models.Model):
    """One typed row of a transcript. `seq` is its place; a person's message that waits for the
    running answer to end (enqueue, interrupt, an undelivered steer) has no seq yet."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="entries")
    seq = models.PositiveIntegerField(null=True, blank=True)
    kind = models.CharField(max_length=20, choices=EntryKind.choices)
    text = models.TextField(blank=True)
    data = models.JSONField(default=dict, blank=True)
    # A person's message: the answer run that answers it (or that it was steered into);
    # anything else: the answer run that wrote it.
    run = models.ForeignKey(
        "agents_app.Run",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="conversation_entries",
    )
    # The model turn of that answer it belongs to (an assistant message's tool calls share it).
    turn = models.PositiveIntegerField(null=True, blank=True)
    # A person's message: the double-texting mode it was sent with, and for a steer, the
    # model turn of the running answer it was delivered at.
    mode = models.CharField(max_length=10, choices=DoubleTexting.choices, blank=True)
    delivered_at_turn = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["conversation", "seq", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "seq"], name="conversation_entry_seq_unique"
            )
        ]
        indexes = [models.Index(fields=["conversation", "seq"])]

    def __str__(self) -> str:
        return f"{self.conversation_id}#{self.seq} {self.kind}"
