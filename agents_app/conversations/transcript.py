"""A conversation's transcript: typed rows in, OpenAI messages out, and back.

`replay` turns the rows into the messages any OpenAI-compatible server takes; `append_answer`
and `append_cut` write what an answer said and heard (engine.executor.Added) as rows, in the
transaction that records the step's outcome or the cut, so a call never lacks its result.
"""

import json
from dataclasses import dataclass
from typing import Any

from django.db.models import F

from agents_app.core.events import publish
from agents_app.engine.executor import Added
from agents_app.engine.untrusted import as_data
from agents_app.models import Conversation, ConversationEntry, EntryKind, Run
from agents_app.runs.recipes import recipe_for


def conversation_group(conversation_id: int) -> str:
    return f"conversation.{conversation_id}"


SUMMARY_HEADING = (
    "(Summary of the earlier conversation. The requests it marks as done were answered "
    "already: do not do them again unless the person asks anew.)"
)


def masked_note(tool: str, chars: int) -> str:
    """What the model is shown instead of an old tool output that a condensation masked."""
    return f"[output of {tool or 'the tool'} masked: {chars} chars; see the transcript]"


@dataclass(frozen=True)
class Condensed:
    """What the condensation rows among a transcript's rows say, whatever their own seq: the
    summaries in force (data.summary true, the summary in text), each standing for the rows of
    its seq range (a later summary whose range holds an earlier one's replaces it), and the
    seqs of the tool results masked."""

    summaries: tuple[ConversationEntry, ...]
    masked: frozenset[int]

    def hidden(self, seq: int | None) -> bool:
        """Whether the row at `seq` is replaced by a summary."""
        return seq is not None and any(
            s.data["first_seq"] <= seq <= s.data["last_seq"] for s in self.summaries
        )


def condensed(entries: list[ConversationEntry]) -> Condensed:
    summaries: list[ConversationEntry] = []
    masked: set[int] = set()
    marks = [e for e in entries if e.kind == EntryKind.CONDENSATION and e.seq is not None]
    for entry in sorted(marks, key=lambda e: e.seq):
        data = entry.data
        if data.get("summary") and "first_seq" in data and "last_seq" in data:
            first, last = data["first_seq"], data["last_seq"]
            summaries = [
                s
                for s in summaries
                if not (first <= s.data["first_seq"] and s.data["last_seq"] <= last)
            ]
            summaries.append(entry)
        masked.update(data.get("masked") or ())
    return Condensed(tuple(summaries), frozenset(masked))


def replay(entries: list[ConversationEntry]) -> list[dict[str, Any]]:
    """The rows (in seq order) as OpenAI chat messages. Reasoning is for people and is not
    sent back. A condensation stands for the rows it covers (see conversations.condense): a
    summary is one message where its range begins and the range's rows are left out; a masked
    tool result keeps its place with a one-line note, so its call still has a result. The
    original rows are never changed. A summary is shown as data; tool results are left as
    they are here and become data on their way to the model (engine.calls.ask_model)."""
    view = condensed(entries)
    pending = sorted(view.summaries, key=lambda s: s.data["first_seq"])
    messages: list[dict[str, Any]] = []
    open_turn: tuple[int | None, int | None] | None = None

    def summary(entry: ConversationEntry) -> None:
        # A model wrote it from the tools' outputs, which it retells: data, as they were.
        text = as_data(entry.text, "conversation summary")
        messages.append({"role": "user", "content": f"{SUMMARY_HEADING}\n{text}"})

    for entry in entries:
        while pending and entry.seq is not None and entry.seq >= pending[0].data["first_seq"]:
            summary(pending.pop(0))
            open_turn = None
        if view.hidden(entry.seq):
            continue
        if entry.kind == EntryKind.USER:
            messages.append({"role": "user", "content": entry.text})
            open_turn = None
        elif entry.kind == EntryKind.ASSISTANT:
            messages.append({"role": "assistant", "content": entry.text})
            open_turn = (entry.run_id, entry.turn)
        elif entry.kind == EntryKind.TOOL_CALL:
            call = {
                "id": entry.data["call_id"],
                "type": "function",
                "function": {
                    "name": entry.data["wire_name"],
                    "arguments": json.dumps(entry.data.get("arguments", {})),
                },
            }
            turn = (entry.run_id, entry.turn)
            last = messages[-1] if messages else None
            if open_turn == turn and last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
                if not last["content"]:
                    last["content"] = None
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
                open_turn = turn
        elif entry.kind == EntryKind.TOOL_RESULT:
            content = entry.text
            if entry.seq in view.masked:
                content = masked_note(entry.data.get("wire_name", ""), len(entry.text))
            messages.append(
                {"role": "tool", "tool_call_id": entry.data["call_id"], "content": content}
            )
    for entry in pending:  # a range whose rows are all gone
        summary(entry)
    return messages


def chat_messages(run: Run) -> list[dict[str, Any]]:
    """What a chat answer sends the model: the system message with the person's standing
    instructions, then the transcript so far (condensed where it was condensed)."""
    conversation = Conversation.objects.get(pk=run.conversation_id)
    rows = list(
        ConversationEntry.objects.filter(conversation=conversation, seq__isnull=False).order_by(
            "seq"
        )
    )
    # A chat's standing instructions, or a contract attempt's contract: its recipe says.
    system = recipe_for(run.kind).system_message(run, conversation)
    return [system, *replay(rows)]


def _next_seq(conversation_id: int, count: int) -> int:
    """Reserve `count` seqs under the conversation's row lock; returns the first."""
    locked = Conversation.objects.select_for_update().filter(pk=conversation_id)
    locked.update(entry_seq=F("entry_seq") + count)
    return locked.values_list("entry_seq", flat=True).get() - count + 1


def place(entries: list[ConversationEntry], conversation_id: int) -> None:
    """Give rows (new or waiting) their places at the end of the transcript and save them."""
    if not entries:
        return
    first = _next_seq(conversation_id, len(entries))
    for offset, entry in enumerate(entries):
        entry.seq = first + offset
        if entry.pk is None:
            entry.save()
        else:
            entry.save(update_fields=["seq", "run", "data"])
    announce(conversation_id)


def announce(conversation_id: int) -> None:
    """Tell the pages showing the conversation that its rows changed (after the commit); they
    read what is new by seq, so a lost notice only delays them."""
    from django.db import transaction

    seq = Conversation.objects.filter(pk=conversation_id).values_list("entry_seq", flat=True)
    transaction.on_commit(
        lambda: publish(
            conversation_group(conversation_id),
            [
                {
                    "type": "conversation.changed",
                    "conversation_id": conversation_id,
                    "seq": seq.first(),
                }
            ],
        )
    )


def _rows(
    run: Run, added: Added, *, closing: str, answer: str | None = None
) -> list[ConversationEntry]:
    """The rows for what an answer added: per assistant message its reasoning, text and calls;
    per tool message its result; the messages steered in (their waiting rows); every call
    without a result closed with `closing`; then the answer itself."""
    conversation_id = run.conversation_id
    turn_of = {index: turn for index, turn in added.turns}
    steered = {index: token for index, token in added.steered}
    waiting = {
        e.pk: e
        for e in ConversationEntry.objects.filter(pk__in=list(steered.values()), seq__isnull=True)
    }
    names: dict[str, str] = {}
    rows: list[ConversationEntry] = []

    def row(kind: str, text: str = "", turn: int | None = None, **data: Any) -> None:
        rows.append(
            ConversationEntry(
                conversation_id=conversation_id, kind=kind, text=text, data=data, run=run, turn=turn
            )
        )

    def thought(turn: int | None) -> None:
        if turn is not None and turn < len(added.thoughts) and added.thoughts[turn]:
            row(EntryKind.REASONING, added.thoughts[turn], turn)

    for index, message in enumerate(added.messages):
        role = message.get("role")
        if role == "assistant":
            turn = turn_of.get(index)
            thought(turn)
            if message.get("content"):
                row(EntryKind.ASSISTANT, message["content"], turn)
            for call in message.get("tool_calls") or ():
                function = call["function"]
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except ValueError:
                    arguments = {"_raw": function.get("arguments")}
                names[call["id"]] = function["name"]
                row(
                    EntryKind.TOOL_CALL,
                    "",
                    turn,
                    call_id=call["id"],
                    wire_name=function["name"],
                    arguments=arguments,
                )
        elif role == "tool":
            call_id = message.get("tool_call_id", "")
            content = str(message.get("content") or "")
            row(
                EntryKind.TOOL_RESULT,
                content,
                None,
                call_id=call_id,
                wire_name=names.get(call_id, ""),
                ok=not content.startswith('{"error"'),
            )
        elif role == "user" and index in steered:
            entry = waiting.get(steered[index])
            if entry is not None:
                entry.run = run
                rows.append(entry)
    for call in added.without_results():
        row(
            EntryKind.TOOL_RESULT,
            json.dumps({"error": closing}),
            None,
            call_id=call["id"],
            wire_name=call["function"]["name"],
            ok=False,
            closed=True,
        )
    if answer:
        final_turn = len(added.thoughts) - 1 if added.thoughts else None
        thought(final_turn)
        row(EntryKind.ASSISTANT, answer, final_turn)
    return rows


def append_answer(run: Run, added: Added | None, answer: str, *, closing: str = "") -> None:
    """Write a finished answer's rows (inside the transaction recording the step)."""
    if added is None:
        added = Added(messages=[], turns=[], thoughts=[], steered=[])
    closing = closing or "The answer ended before this call returned."
    place(_rows(run, added, closing=closing, answer=answer), run.conversation_id)


def append_cut(run: Run, added: Added | None, reason: str) -> None:
    """Write what an answer cut short had said and heard; its open calls get `reason`."""
    if added is None:
        return
    place(_rows(run, added, closing=reason), run.conversation_id)
