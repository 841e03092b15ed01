"""What an agent's tab shows of an attempt: its transcript rows as the chat draws them
(web.chat_rows), with its evaluations and a log that could not be written placed between them
by time. One reader for the whole tab and for the rows after a seq that agent.js fetches."""

from dataclasses import dataclass
from datetime import datetime

from agents_app.conversations.selectors import entries_after
from agents_app.core.events import EventType
from agents_app.models import Run, RunEvent
from agents_app.web.chat_rows import Item, items_of

NOTE_EVENTS = (EventType.CONTRACT_EVALUATION, EventType.LOG_FAILED)


@dataclass
class Note:
    """An event of the attempt shown between its rows: an evaluation, or a log not written."""

    event: RunEvent
    text: str
    kind: str  # "evaluation" | "log_failed"
    met: bool = False

    @property
    def created_at(self) -> datetime:
        return self.event.created_at


def note_of(event: RunEvent) -> Note:
    payload = event.payload
    if event.type == EventType.LOG_FAILED:
        return Note(
            event,
            f"The log file could not be written ({payload.get('error')}); the output is "
            "kept and the download is rendered from it.",
            "log_failed",
        )
    met = bool(payload.get("met"))
    verdict = "met" if met else "not met"
    return Note(
        event,
        f"Evaluation after cycle {payload.get('cycle')}: {verdict} — {payload.get('reason')}",
        "evaluation",
        met,
    )


@dataclass
class Output:
    """An attempt's output after (`last_seq`, `last_event`): rows and notes in time order."""

    lines: list[Item | Note]
    last_seq: int
    last_event: int


def attempt_output(run: Run, *, after: int = 0, events_after: int = 0) -> Output:
    """The attempt's transcript rows after seq `after` and its evaluations and log problems
    after event seq `events_after`, interleaved by time (an evaluation follows its cycle)."""
    entries = entries_after(run.conversation, after=after, limit=2000)
    events = list(
        RunEvent.objects.filter(run=run, type__in=NOTE_EVENTS, seq__gt=events_after).order_by("seq")
    )
    items: list[Item | Note] = list(items_of(entries))
    notes = [note_of(event) for event in events]
    lines = sorted(
        items + notes,
        key=lambda line: line.entry.created_at if isinstance(line, Item) else line.created_at,
    )
    return Output(
        lines=lines,
        last_seq=(entries[-1].seq if entries else after) or 0,
        last_event=events[-1].seq if events else events_after,
    )
