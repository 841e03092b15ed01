"""Replay-then-live delivery of a run's events, with no gap and no duplicate.

A client says which seq it holds. The feed joins the run's group first, then reads what the
client is missing from the table; live messages that follow are dropped when already sent and
trigger a read of the table when one was missed (a publish is best effort, the table is not).
"""

from typing import Any

from channels.db import database_sync_to_async

from agents_app.core.events import event_message
from agents_app.models import RunEvent

BATCH = 500


def parse_after(raw: Any) -> int:
    """The seq a client holds, from a query parameter or Last-Event-ID; junk means 0."""
    try:
        return max(0, int(raw))
    except (TypeError, ValueError):
        return 0


@database_sync_to_async
def _events_after(run_id: int, after: int) -> list[dict[str, Any]]:
    rows = RunEvent.objects.filter(run_id=run_id, seq__gt=after).order_by("seq")[:BATCH]
    return [event_message(e) for e in rows]


class RunFeed:
    def __init__(self, run_id: int, after: int = 0):
        self.run_id = run_id
        self.last_seq = after

    async def backlog(self) -> list[dict[str, Any]]:
        """Every stored event after the last one delivered, in order."""
        missing: list[dict[str, Any]] = []
        while True:
            batch = await _events_after(self.run_id, self.last_seq)
            if not batch:
                return missing
            missing += batch
            self.last_seq = batch[-1]["seq"]

    async def live(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """What to deliver for a live `run.events` message (one commit's events, in seq
        order): those not delivered yet when they follow on, the table's backlog after a gap."""
        fresh: list[dict[str, Any]] = []
        for event in message.get("events", []):
            seq = event["seq"]
            if seq <= self.last_seq:
                continue
            if seq != self.last_seq + 1:
                return fresh + await self.backlog()
            self.last_seq = seq
            fresh.append(event)
        return fresh
