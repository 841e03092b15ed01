"""State changes of conversations asked for by people (REST, MCP, pages), and what follows the
end of an answer. Each is one transaction with its AuditEvent.

Locks: a person's act locks the conversation row alone; an answer's end (runs.lifecycle.finish
→ answer_next) holds its run's row and then takes the conversation's. Nothing takes them the
other way round, so the two cannot deadlock: an interrupt or a stop asks the running answer to
cancel only after its own transaction committed.
"""

from typing import Any

from django.db import transaction
from django.utils import timezone

from agents_app.connections.services import connection_for_task
from agents_app.conversations.outcomes import message_outcome_of
from agents_app.conversations.selectors import answer_running, conversation_get
from agents_app.conversations.transcript import announce, place
from agents_app.core.audit import (
    CONVERSATION_CREATE,
    CONVERSATION_MESSAGE,
    CONVERSATION_STOP,
    CONVERSATION_UPDATE,
    audit_record,
)
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.inputs import flag_field, refuse_unknown, text_field
from agents_app.models import (
    Conversation,
    ConversationEntry,
    DoubleTexting,
    EntryKind,
    Run,
    RunKind,
    Task,
)
from agents_app.runs.admission import admission_check, run_admit
from agents_app.runs.control import refuse_while_halted
from agents_app.runs.services import run_cancel, run_create
from agents_app.runs.writer import RunWriter

TITLE_CHARS = 200
MESSAGE_MAX_CHARS = 100_000
INSTRUCTIONS_MAX_CHARS = 20_000


def _mode(value: Any, field: str = "double_texting") -> str:
    if value not in DoubleTexting.values:
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            f"Unknown {field} {value!r}",
            {"field": field, "allowed": DoubleTexting.values},
        )
    return value


@transaction.atomic
def conversation_create(
    *,
    owner: Any,
    interface: str,
    title: str | None = None,
    connection: int | str | None = None,
    double_texting: str = DoubleTexting.ENQUEUE,
    instructions: str | None = None,
) -> Conversation:
    """A new, empty conversation. `connection` is the id or name of an enabled LLM connection
    (None: the default). Raises DomainError VALIDATION_ERROR for bad input, LLM_NOT_CONFIGURED
    without a usable LLM."""
    title = text_field(title, "title", max_chars=TITLE_CHARS, required=False)
    instructions = text_field(
        instructions, "instructions", max_chars=INSTRUCTIONS_MAX_CHARS, required=False
    )
    chosen = connection_for_task(connection)
    conversation = Conversation.objects.create(
        owner=owner,
        title=title.strip(),
        # The default connection is not pinned: the conversation follows it when staff change it.
        connection=chosen if connection not in (None, "") else None,
        double_texting=_mode(double_texting),
        instructions=instructions,
    )
    audit_record(
        action=CONVERSATION_CREATE,
        interface=interface,
        actor=owner,
        target=str(conversation.pk),
        details={"connection_id": chosen.pk, "double_texting": conversation.double_texting},
    )
    return conversation


@transaction.atomic
def conversation_update(
    *, conversation: Conversation, actor: Any, interface: str, **changes: Any
) -> Conversation:
    """Change title, connection, double_texting, instructions or is_open (the keys given);
    audited with the fields changed."""
    allowed = {"title", "connection", "double_texting", "instructions", "is_open"}
    refuse_unknown(changes, allowed)
    fields = ["updated_at"]
    if "title" in changes:
        conversation.title = text_field(
            changes["title"], "title", max_chars=TITLE_CHARS, required=False
        ).strip()
        fields.append("title")
    if "instructions" in changes:
        conversation.instructions = text_field(
            changes["instructions"],
            "instructions",
            max_chars=INSTRUCTIONS_MAX_CHARS,
            required=False,
        )
        fields.append("instructions")
    if "double_texting" in changes:
        conversation.double_texting = _mode(changes["double_texting"])
        fields.append("double_texting")
    if "connection" in changes:
        value = changes["connection"]
        conversation.connection = None if value in (None, "") else connection_for_task(value)
        fields.append("connection")
    if "is_open" in changes:
        conversation.is_open = flag_field(changes["is_open"], "is_open")
        fields.append("is_open")
    conversation.updated_at = timezone.now()
    conversation.save(update_fields=fields)
    audit_record(
        action=CONVERSATION_UPDATE,
        interface=interface,
        actor=actor,
        target=str(conversation.pk),
        details={"fields": sorted(changes)},
    )
    return conversation


# A title taken from a first message: at most this many characters, cut at a word with "…".
TAKEN_TITLE_CHARS = 60


def title_from(text: str) -> str:
    """A conversation's title from its first message: its words on one line, and when they are
    longer than TAKEN_TITLE_CHARS, as many whole words as fit, then "…" (a word longer than that
    is cut)."""
    line = " ".join(text.split())
    if len(line) <= TAKEN_TITLE_CHARS:
        return line
    kept = line[: TAKEN_TITLE_CHARS - 1]
    if line[TAKEN_TITLE_CHARS - 1] != " " and " " in kept:
        kept = kept.rsplit(" ", 1)[0]
    return kept.rstrip(" ,.;:") + "…"


def message_post(
    *,
    conversation: Conversation,
    actor: Any,
    interface: str,
    text: Any,
    mode: str | None = None,
) -> tuple[ConversationEntry, Run | None]:
    """A person's message. With no answer running it is answered now; otherwise `mode` (the
    conversation's double_texting when None) decides: enqueue waits for the answer to end,
    reject raises CONFLICT (nothing stored), interrupt waits and stops the running answer at
    its next checkpoint, steer is delivered into the running answer at its next step boundary
    (answered next if that answer ends first). Returns the stored row and the run that answers
    it now (None while it waits). Raises VALIDATION_ERROR, CONFLICT, SERVICE_UNAVAILABLE (the
    kill switch), RATE_LIMITED (too many runs waiting their turn), LLM_NOT_CONFIGURED."""
    text = text_field(text, "text", max_chars=MESSAGE_MAX_CHARS, required=True)
    mode = _mode(conversation.double_texting if mode in (None, "") else mode, "mode")
    refuse_while_halted()
    admission_check(conversation.owner_id)
    with transaction.atomic():
        locked = Conversation.objects.select_for_update().get(pk=conversation.pk)
        running = answer_running(locked)
        if running is not None and mode == DoubleTexting.REJECT:
            raise DomainError(
                ErrorCode.CONFLICT,
                f"An answer is still running in conversation {locked.pk}; wait for it, stop "
                "it, or send with another mode",
                {"conversation_id": locked.pk, "run_id": running.pk, "mode": mode},
            )
        entry = ConversationEntry.objects.create(
            conversation=locked, kind=EntryKind.USER, text=text, mode=mode
        )
        started = None
        if running is None:
            # The oldest waiting message first (this one, unless others wait before it).
            first = next(iter(_waiting(locked)), entry)
            started = _answer(locked, first)
            # No test leaves a message waiting with no answer running (an answer's end answers
            # the next one): tests/dialect_guard.py asks every other line here.
            if first.pk != entry.pk:  # pragma: no cover
                started = None
        else:
            announce(locked.pk)
        locked.updated_at = timezone.now()
        if not locked.title:
            locked.title = title_from(text)
        locked.save(update_fields=["updated_at", "title"])
        outcome = message_outcome_of(mode=mode, answered=started is not None)
        audit_record(
            action=CONVERSATION_MESSAGE,
            interface=interface,
            actor=actor,
            run=started or running,
            target=str(locked.pk),
            details={"entry_id": entry.pk, "mode": mode, "outcome": outcome},
        )
    if running is not None and started is None and mode == DoubleTexting.INTERRUPT:
        _cancel(running, actor=actor, interface=interface)
    return entry, started


def conversation_stop(*, conversation: Conversation, actor: Any, interface: str) -> Run | None:
    """Stop the running answer (at its next checkpoint) and hold the messages waiting after
    it: they stay in the transcript, unanswered. Returns the answer stopped, or None."""
    with transaction.atomic():
        locked = Conversation.objects.select_for_update().get(pk=conversation.pk)
        running = answer_running(locked)
        held = _waiting(locked)
        for entry in held:
            entry.data = {**entry.data, "held": "stopped before it was answered"}
            entry.save(update_fields=["data"])
        if running is None:
            # Nothing will end to place them: they join the transcript now.
            place(held, locked.pk)
        audit_record(
            action=CONVERSATION_STOP,
            interface=interface,
            actor=actor,
            run=running,
            target=str(locked.pk),
            details={"held": [e.pk for e in held]},
        )
    if running is not None:
        _cancel(running, actor=actor, interface=interface)
    return running


def answer_next(w: RunWriter) -> None:
    """A chat answer's end (its recipe's on_finish), in its transaction: the messages held by
    a stop join the transcript unanswered, and the oldest message waiting is answered."""
    run = w.run
    # Only a chat's recipe calls this, and a chat run always has its conversation (which
    # takes its runs with it when deleted): no test reaches this return (tests/dialect_guard.py
    # asks every other line here).
    if run.conversation_id is None:  # pragma: no cover
        return
    conversation = Conversation.objects.select_for_update().get(pk=run.conversation_id)
    waiting = _waiting(conversation, ended=run.pk)
    held = [e for e in waiting if e.data.get("held")]
    place(held, conversation.pk)
    # A message a replay was to be steered (REPLAY_TURN) is never answered on its own: it
    # was answered in the replay's source.
    rest = [e for e in waiting if not e.data.get("held") and REPLAY_TURN not in e.data]
    if rest:
        _answer(conversation, rest[0])
    else:
        announce(conversation.pk)


def _waiting(conversation: Conversation, *, ended: int | None = None) -> list[ConversationEntry]:
    """The person's messages not yet in the transcript, oldest first: queued, or steered into
    an answer that ended (`ended`: the one ending now) before it placed them."""
    rows = ConversationEntry.objects.filter(
        conversation=conversation, kind=EntryKind.USER, seq__isnull=True
    ).select_related("run")
    return [
        e for e in rows.order_by("id") if e.run is None or e.run_id == ended or e.run.is_terminal
    ]


def _answer(conversation: Conversation, entry: ConversationEntry) -> Run:
    """Start the answer to `entry`: it takes its place in the transcript and a chat run of its
    own (a Task holding the message, so budgets, restarts and audit work as for any run)."""
    task = Task.objects.create(
        owner=conversation.owner,
        text=entry.text,
        context={"conversation_id": conversation.pk},
        fast_path=True,
        connection=conversation.connection,
    )
    run = run_create(task=task, kind=RunKind.CHAT, conversation=conversation, first=True)
    entry.run = run
    place([entry], conversation.pk)
    run_admit(run)
    return run


def _cancel(run: Run, *, actor: Any, interface: str) -> None:
    try:
        run_cancel(run=run, actor=actor, interface=interface)
    except DomainError as exc:
        if exc.code != ErrorCode.CONFLICT:  # it ended meanwhile: its end answered what waits
            raise


__all__ = [
    "answer_next",
    "conversation_create",
    "conversation_get",
    "conversation_stop",
    "conversation_update",
    "message_post",
]


def conversation_for_replay(source: Run) -> Conversation:
    """A copy of the conversation of the chat answer `source` as it stood when `source` began:
    its transcript up to the message `source` answered. A replay of that answer reads and
    appends to the copy (closed, titled for the run it replays), never to the person's own
    conversation; the messages steered into `source` wait in it to be steered in again."""
    original = Conversation.objects.get(pk=source.conversation_id)
    asked = (
        ConversationEntry.objects.filter(conversation=original, run=source, seq__isnull=False)
        .order_by("seq")
        .values_list("seq", flat=True)
        .first()
    )
    upto = asked if asked is not None else original.entry_seq
    copy = Conversation.objects.create(
        owner_id=original.owner_id,
        title=f"Replay of run {source.pk}",
        connection=original.connection,
        double_texting=original.double_texting,
        instructions=original.instructions,
        is_open=False,
        entry_seq=upto,
    )
    ConversationEntry.objects.bulk_create(
        ConversationEntry(
            conversation=copy,
            seq=entry.seq,
            kind=entry.kind,
            text=entry.text,
            data=entry.data,
            turn=entry.turn,
            mode=entry.mode,
            delivered_at_turn=entry.delivered_at_turn,
            created_at=entry.created_at,
        )
        for entry in original.entries.filter(seq__isnull=False, seq__lte=upto).order_by("seq")
    )
    # The messages steered into `source` while it answered wait to be steered into the
    # replay at the turn they were delivered at (DatabaseHooks.incoming).
    ConversationEntry.objects.bulk_create(
        ConversationEntry(
            conversation=copy,
            kind=EntryKind.USER,
            text=entry.text,
            data={**entry.data, REPLAY_TURN: entry.delivered_at_turn},
            mode=DoubleTexting.STEER,
            created_at=entry.created_at,
        )
        for entry in original.entries.filter(
            run=source, kind=EntryKind.USER, delivered_at_turn__isnull=False
        ).order_by("id")
    )
    return copy


# A steered message copied for a replay: the turn before which it is not delivered.
REPLAY_TURN = "replay_turn"
