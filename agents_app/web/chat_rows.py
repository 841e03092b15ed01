"""What a chat tab shows, read from the rows: the transcript as items the templates render one
way whether the page draws it whole or sends the rows that follow a seq (the socket's live
rows are fetched as that fragment, so there is one renderer), the messages waiting for a
place, how each finished answer ended when it did not end well, and the approvals it waits for.

Reasoning is an item of its own (a collapsible panel), never part of the answer: a `<think>`
block left in an assistant's text is split out into one too."""

from dataclasses import dataclass
from typing import Any

from agents_app.conversations.condense import context_usage
from agents_app.conversations.presenters import call_summary
from agents_app.conversations.selectors import answer_running, entries_after, waiting_messages
from agents_app.models import (
    Approval,
    ApprovalStatus,
    Conversation,
    ConversationEntry,
    DoubleTexting,
    EntryKind,
    Run,
    RunStatus,
)
from agents_app.web.run_page import split_think

# How many ended answers a fragment reports (the page places each after its rows).
ENDS_SHOWN = 20

WAITING_NOTES = {
    DoubleTexting.ENQUEUE: "queued: answered when the running answer ends",
    DoubleTexting.INTERRUPT: "queued: the running answer stops at its next checkpoint first",
    DoubleTexting.STEER: "waiting to be delivered into the running answer at its next step",
}


@dataclass
class Item:
    """One transcript row as shown. `result` is a tool call's result row, when it is known."""

    entry: ConversationEntry
    kind: str
    text: str = ""
    thought: str = ""  # reasoning split out of an assistant's text
    tool: str = ""
    call_short: str = ""
    call_full: str = ""
    call_id: str = ""
    result: "Item | None" = None
    note: str = ""  # how a person's message was handled
    end: "End | None" = None  # on a whole page: the answer that ended badly after this row

    @property
    def seq(self) -> int | None:
        return self.entry.seq


@dataclass
class End:
    """How an answer ended when it did not simply answer: failed (its error) or stopped."""

    run: Run
    failed: bool


@dataclass
class Update:
    """A tab's state after `after`: the new rows, the waiting messages, the answer running
    (None: idle), its pending approvals, and the answers that ended badly."""

    items: list[Item]
    waiting: list[Item]
    running: Run | None
    approvals: list[Approval]
    ends: list[End]
    last_seq: int
    context: dict[str, Any]  # condense.context_usage: what the next answer would send


def tool_of(entry: ConversationEntry) -> str:
    return str(entry.data.get("tool") or entry.data.get("wire_name") or "tool")


def user_note(entry: ConversationEntry) -> str:
    """What happened to a person's message, in words (empty: answered as usual)."""
    if entry.data.get("held"):
        return str(entry.data["held"])
    if entry.delivered_at_turn is not None:
        # Turns count from 0; people count steps from 1.
        return f"delivered at step {entry.delivered_at_turn + 1}"
    if entry.seq is None:
        return WAITING_NOTES.get(entry.mode, "waiting")
    return ""


def item_of(entry: ConversationEntry) -> Item:
    item = Item(entry=entry, kind=entry.kind, text=entry.text)
    if entry.kind == EntryKind.USER:
        item.note = user_note(entry)
    elif entry.kind == EntryKind.ASSISTANT:
        item.text, item.thought = split_think(entry.text)
    elif entry.kind == EntryKind.TOOL_CALL:
        item.tool = tool_of(entry)
        item.call_short, item.call_full = call_summary(item.tool, entry.data.get("arguments", {}))
        item.call_id = str(entry.data.get("call_id", ""))
    elif entry.kind == EntryKind.TOOL_RESULT:
        item.tool = tool_of(entry)
        item.call_id = str(entry.data.get("call_id", ""))
    return item


def items_of(entries: list[ConversationEntry]) -> list[Item]:
    """The rows as items, each result inside its call when the call is among them (a result
    whose call came earlier stays an item: the page moves it into the call it names)."""
    items: list[Item] = []
    calls: dict[str, Item] = {}
    for entry in entries:
        item = item_of(entry)
        if item.kind == EntryKind.TOOL_RESULT and item.call_id in calls:
            calls[item.call_id].result = item
            continue
        if item.kind == EntryKind.TOOL_CALL:
            calls[item.call_id] = item
        items.append(item)
    return items


def ended_badly(conversation: Conversation) -> list[End]:
    """The latest answers that failed or were stopped, oldest first."""
    runs = Run.objects.filter(
        conversation=conversation, status__in=[RunStatus.FAILED, RunStatus.CANCELLED]
    ).order_by("-id")[:ENDS_SHOWN]
    return [End(run=run, failed=run.status == RunStatus.FAILED) for run in reversed(runs)]


def chat_update(conversation: Conversation, *, after: int = 0) -> Update:
    """The tab's state from `after` on. The ends of answers are read before the rows, so an
    answer that ends meanwhile has its rows in this update or in the next one."""
    running = answer_running(conversation)
    ends = ended_badly(conversation)
    entries = entries_after(conversation, after=after, limit=2000)
    items = items_of(entries)
    approvals = (
        list(
            Approval.objects.filter(run=running, status=ApprovalStatus.PENDING).order_by(
                "created_at", "id"
            )
        )
        if running is not None
        else []
    )
    for approval in approvals:
        approval.call_short, approval.call_full = call_summary(approval.tool, approval.arguments)
    _place_ends(items, ends)
    return Update(
        items=items,
        waiting=[item_of(e) for e in waiting_messages(conversation)],
        running=running,
        approvals=approvals,
        ends=ends,
        last_seq=(entries[-1].seq if entries else after) or 0,
        context=context_usage(conversation),
    )


def _place_ends(items: list[Item], ends: list[End]) -> None:
    """Each end after the last item of its answer (the message it answers included)."""
    last: dict[int, Item] = {}
    for item in items:
        for entry in (item.entry, item.result.entry if item.result else None):
            if entry is not None and entry.run_id is not None:
                last[entry.run_id] = item
    for end in ends:
        if end.run.pk in last:
            last[end.run.pk].end = end
