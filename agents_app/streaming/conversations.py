"""A conversation over a WebSocket: its transcript after the seq the client holds, then live;
the messages waiting for a place; the running answer, and that answer's events and tokens.

One JSON contract for the chat page (`ws/conversations/<id>/`, session) and for mobile clients
(`ws/api/conversations/<id>/`, API key):

    {"type": "entry", "entry": <entry_payload>}           each row with seq > after, in order
    {"type": "waiting", "entries": [<entry_payload>, …]}   on connect and whenever it changes
    {"type": "answer", "run_id": N | null, "status": s}   on connect, on change, at its end
    {"type": "run_event", "run_id": N, "event": {seq, type, payload, created_at}}
    {"type": "token", "run_id": N, "token": "…", "reasoning": bool}

Replay-then-live as for runs (feeds.RunFeed): the socket joins the conversation's group before
reading the table, and each `conversation.changed` notice makes it read what is new by seq, so
nothing is missed or sent twice. While an answer runs the socket also follows that run's group
(from the run's first event, so a late tab sees the calls of the answer in flight) and leaves
it, after reading the rest of its events, when the answer ends.
"""

import json
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from agents_app.conversations.presenters import entry_payload
from agents_app.conversations.selectors import answer_running, entries_after, waiting_messages
from agents_app.conversations.transcript import conversation_group
from agents_app.core.errors import ErrorCode
from agents_app.core.events import EventType, run_group
from agents_app.models import Conversation, Run
from agents_app.streaming.credentials import FollowsCredential
from agents_app.streaming.feeds import BATCH, RunFeed, parse_after
from agents_app.streaming.messages import SocketMessage

# Close codes, as for the run sockets.
UNAUTHORIZED = 4401
FORBIDDEN = 4403
# `status` of the answer message when no answer runs.
IDLE = "idle"


@database_sync_to_async
def _owned(user: Any, conversation_id: int) -> Conversation | None:
    return Conversation.objects.filter(pk=conversation_id, owner=user).first()


@database_sync_to_async
def _state(
    conversation: Conversation, after: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Run | None]:
    """Rows after `after` (one batch), the waiting messages and the running answer."""
    rows = [entry_payload(e) for e in entries_after(conversation, after=after, limit=BATCH)]
    waiting = [entry_payload(e) for e in waiting_messages(conversation)]
    return rows, waiting, answer_running(conversation)


@database_sync_to_async
def _entries_after(conversation: Conversation, after: int) -> list[dict[str, Any]]:
    return [entry_payload(e) for e in entries_after(conversation, after=after, limit=BATCH)]


@database_sync_to_async
def _run_status(run_id: int) -> str:
    return Run.objects.filter(pk=run_id).values_list("status", flat=True).first() or ""


def _run_event(event: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": SocketMessage.RUN_EVENT,
        "run_id": event["run_id"],
        "event": {
            "seq": event["seq"],
            "type": event["event_type"],
            "payload": event["payload"],
            "created_at": event["created_at"],
        },
    }


class ConversationConsumer(FollowsCredential, AsyncWebsocketConsumer):
    conversation: Conversation | None = None
    last_seq = 0
    waiting: list[dict[str, Any]] | None = None
    answer: tuple[int | None, str] | None = None
    feed: RunFeed | None = None  # the running answer's events, while the socket follows it

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.refuse(UNAUTHORIZED)
            return
        conversation_id = self.scope["url_route"]["kwargs"]["conversation_id"]
        self.conversation = await _owned(user, conversation_id)
        if self.conversation is None:  # another user's looks exactly like a missing one
            await self.refuse(FORBIDDEN)
            return
        query = parse_qs(self.scope.get("query_string", b"").decode())
        self.last_seq = parse_after(query.get("after", ["0"])[0])
        # Join before reading: whatever commits after the read is announced to this socket.
        await self.channel_layer.group_add(
            conversation_group(self.conversation.pk), self.channel_name
        )
        await self.accept()
        await self.catch_up()

    async def disconnect(self, code: int) -> None:
        if self.conversation is not None:
            await self.channel_layer.group_discard(
                conversation_group(self.conversation.pk), self.channel_name
            )
        if self.feed is not None:
            await self.channel_layer.group_discard(run_group(self.feed.run_id), self.channel_name)

    async def refuse(self, code: int) -> None:
        """The page socket refuses the handshake (the page only needs to know it is refused)."""
        await self.close(code=code)

    async def send_json(self, message: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps(message, ensure_ascii=False))

    async def catch_up(self) -> None:
        """Send what changed since the last read: new rows, the waiting messages, the answer;
        follow the running answer's run, or stop following the one that ended."""
        assert self.conversation is not None
        rows, waiting, running = await _state(self.conversation, self.last_seq)
        while rows:
            for row in rows:
                await self.send_json({"type": SocketMessage.ENTRY, "entry": row})
            self.last_seq = rows[-1]["seq"]
            rows = await _entries_after(self.conversation, self.last_seq)
        if waiting != self.waiting:
            self.waiting = waiting
            await self.send_json({"type": SocketMessage.WAITING, "entries": waiting})
        running_id = running.pk if running is not None else None
        if self.feed is not None and self.feed.run_id != running_id:
            await self.unfollow()
        if running is not None:
            await self.send_answer(running.pk, running.status)
            if self.feed is None:
                await self.follow(running.pk)
        else:
            await self.send_answer(None, IDLE)

    async def send_answer(self, run_id: int | None, status: str) -> None:
        if self.answer != (run_id, status):
            self.answer = (run_id, status)
            await self.send_json({"type": SocketMessage.ANSWER, "run_id": run_id, "status": status})

    async def follow(self, run_id: int) -> None:
        """Join the answer's group, then send its events from the first."""
        self.feed = RunFeed(run_id, 0)
        await self.channel_layer.group_add(run_group(run_id), self.channel_name)
        for event in await self.feed.backlog():
            await self.send_json(_run_event(event))

    async def unfollow(self) -> None:
        """The answer ended: send the rest of its events and how it ended, then leave."""
        feed, self.feed = self.feed, None
        assert feed is not None
        for event in await feed.backlog():
            await self.send_json(_run_event(event))
        await self.channel_layer.group_discard(run_group(feed.run_id), self.channel_name)
        await self.send_answer(feed.run_id, await _run_status(feed.run_id))

    async def conversation_changed(self, message: dict[str, Any]) -> None:
        await self.catch_up()

    async def run_events(self, message: dict[str, Any]) -> None:
        if self.feed is None or message.get("run_id") != self.feed.run_id:
            return  # an answer this socket no longer follows
        events = await self.feed.live(message)
        for event in events:
            await self.send_json(_run_event(event))
        if any(e["event_type"] == EventType.RUN_STATUS for e in events):
            # The table's status, not the event's: a late message never turns it back.
            await self.send_answer(self.feed.run_id, await _run_status(self.feed.run_id))

    async def run_token(self, message: dict[str, Any]) -> None:
        # A token of an answer that has just ended (still in flight when the socket moved on
        # to the next answer) is not shown as the next one's.
        if self.feed is None or message.get("run_id", self.feed.run_id) != self.feed.run_id:
            return
        await self.send_json(
            {
                "type": SocketMessage.TOKEN,
                "run_id": self.feed.run_id,
                "token": message.get("token", ""),
                "reasoning": bool(message.get("reasoning")),
            }
        )

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """The stream only listens for a keep-alive ping; anything else is answered with an
        error message (the socket stays open)."""
        try:
            message = json.loads(text_data or "")
        except ValueError:
            message = None
        if isinstance(message, dict) and message.get("type") == SocketMessage.PING:
            await self.send_json({"type": SocketMessage.PONG, "id": message.get("id")})
            return
        await self.send_json(
            {
                "type": SocketMessage.ERROR,
                "error": {
                    "code": ErrorCode.VALIDATION_ERROR,
                    "message": 'This stream only answers {"type": "ping"}',
                },
            }
        )


class ConversationApiConsumer(ConversationConsumer):
    """For mobile clients, with an API key."""

    async def refuse(self, code: int) -> None:
        # Accepted first, so the close code reaches the client (4401: get a key; 4403: not
        # yours), as the run API socket does.
        await self.accept()
        await self.close(code=code)
