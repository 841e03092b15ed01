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


def publish(run_id: int, messages: list[dict[str, Any]]) -> None:
    """Best effort: the database already holds every event, and clients catch up by seq, so a
    Redis hiccup here must not fail the run."""
    layer = get_channel_layer()
    if layer is None or not messages:
        return
    group = run_group(run_id)

    async def send_all() -> None:
        for message in messages:
            await layer.group_send(group, message)

    try:
        async_to_sync(send_all)()
    except Exception:
        logger.warning(
            "could not publish %d event(s) of run %s", len(messages), run_id, exc_info=True
        )


def publish_events(run_id: int, events: list[Any]) -> None:
    publish(run_id, [event_message(e) for e in events])
