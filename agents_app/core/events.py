"""Publishing committed RunEvents to the channel layer. Nothing else talks to it."""

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)


def run_group(run_id: int) -> str:
    return f"run.{run_id}"


def event_message(event: Any) -> dict[str, Any]:
    return {
        "type": "run.event",
        "run_id": event.run_id,
        "seq": event.seq,
        "event_type": event.type,
        "payload": event.payload,
        "created_at": event.created_at.isoformat(),
    }


def publish(group: str, messages: list[dict[str, Any]]) -> None:
    """Best effort: the database already holds every event, and clients catch up by seq, so a
    Redis hiccup here must not fail the run."""
    layer = get_channel_layer()
    if layer is None or not messages:
        return

    async def send_all() -> None:
        for message in messages:
            await layer.group_send(group, message)

    try:
        async_to_sync(send_all)()
    except Exception:
        logger.warning("could not publish %d message(s) to %s", len(messages), group, exc_info=True)


def user_group(user_id: int) -> str:
    return f"user.{user_id}"


# Events that change what a run looks like in a list of runs (the dashboard).
LISTED_EVENT_TYPES = frozenset({"run_queued", "run_status", "progress_update"})
# Of those, the ones that change a run's status (and so maybe what waits for its owner).
STATUS_EVENT_TYPES = frozenset({"run_queued", "run_status"})


def publish_events(run: Any, events: list[Any]) -> None:
    messages = [event_message(e) for e in events]
    publish(run_group(run.pk), messages)
    if any(e.type in LISTED_EVENT_TYPES for e in events):
        status_changed = any(e.type in STATUS_EVENT_TYPES for e in events)
        publish(
            user_group(run.owner_id),
            [{"type": "run.changed", "run_id": run.pk, "status_changed": status_changed}],
        )
