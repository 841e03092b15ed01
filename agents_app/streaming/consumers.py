"""WebSocket consumers: authenticate, check ownership, join, replay, forward. Nothing else."""

import json
from abc import ABC, abstractmethod
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from agents_app.core.errors import ErrorCode
from agents_app.core.events import run_group, tree_group, user_group
from agents_app.models import Run
from agents_app.streaming.credentials import FollowsCredential
from agents_app.streaming.feeds import RunFeed, parse_after
from agents_app.streaming.messages import SocketMessage
from agents_app.web import fragments
from agents_app.web.live_stream import LiveStream, resets_stream
from agents_app.web.team_panel import in_a_tree, render_team
from tools_app.mcp.store import MCP_STATUS_GROUP

# Close codes: the 4000 range is the application's; these mirror HTTP.
UNAUTHORIZED = 4401
FORBIDDEN = 4403


@database_sync_to_async
def owned_run(user: Any, run_id: int) -> Run | None:
    return Run.objects.filter(pk=run_id, owner=user).select_related("task").first()


class RunConsumer(FollowsCredential, AsyncWebsocketConsumer, ABC):
    """A run's events after the seq the client holds (`?after=N`), then live ones."""

    run: Run | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.refuse(UNAUTHORIZED)
            return
        self.run = await owned_run(user, self.scope["url_route"]["kwargs"]["run_id"])
        if self.run is None:  # another user's run looks exactly like a missing one
            await self.refuse(FORBIDDEN)
            return
        query = parse_qs(self.scope.get("query_string", b"").decode())
        self.feed = RunFeed(self.run.pk, parse_after(query.get("after", ["0"])[0]))
        # Join before reading the backlog: whatever commits after the read arrives live.
        await self.channel_layer.group_add(run_group(self.run.pk), self.channel_name)
        await self.accept()
        await self.deliver(await self.feed.backlog())

    async def disconnect(self, code: int) -> None:
        if self.run is not None:
            await self.channel_layer.group_discard(run_group(self.run.pk), self.channel_name)

    async def refuse(self, code: int) -> None:
        """Closing before accepting refuses the handshake (HTTP 403 whatever the code): the
        pages' script only needs to know it is refused."""
        await self.close(code=code)

    async def run_events(self, message: dict[str, Any]) -> None:
        await self.deliver(await self.feed.live(message))

    async def run_token(self, message: dict[str, Any]) -> None:
        await self.deliver_token(message)

    @abstractmethod
    async def deliver(self, events: list[dict[str, Any]]) -> None:
        """Send replayed or live events in the client's format."""

    @abstractmethod
    async def deliver_token(self, message: dict[str, Any]) -> None:
        """Send a piece of streamed model output in the client's format."""


class RunPageConsumer(RunConsumer):
    """For the run page: HTML fragments that htmx's ws extension swaps in by id. The
    streaming panel shows a phase's whole text so far, so this socket keeps it (LiveStream).
    The page of a run of a team also hears its tree's notices (`tree.<root id>`) and answers
    each with the Team panel read again."""

    tree: str | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.live_stream = LiveStream()

    async def connect(self) -> None:
        await super().connect()
        # in_a_tree may ask the database (a run that parked: did it start a micro agent?).
        if self.run is not None and await database_sync_to_async(in_a_tree)(self.run):
            self.tree = tree_group(self.run.tree_root_id)
            await self.channel_layer.group_add(self.tree, self.channel_name)
            await self.run_tree({})  # whatever changed since the page was rendered

    async def disconnect(self, code: int) -> None:
        await super().disconnect(code)
        if self.tree is not None:
            await self.channel_layer.group_discard(self.tree, self.channel_name)

    async def run_tree(self, message: dict[str, Any]) -> None:
        html = await database_sync_to_async(render_team)(user=self.scope["user"], run=self.run)
        if html:
            await self.send(text_data=html)

    async def deliver(self, events: list[dict[str, Any]]) -> None:
        if events:
            if resets_stream(events):
                self.live_stream.reset()
            html = await database_sync_to_async(fragments.render_run_events)(
                run=self.run, events=events
            )
            await self.send(text_data=html)

    async def deliver_token(self, message: dict[str, Any]) -> None:
        await self.send(text_data=self.live_stream.feed(run_id=self.run.pk, message=message))


def api_message(event: dict[str, Any]) -> dict[str, Any]:
    """Seed 000's WebSocket message {id, type, payload}, with the seq to resume from."""
    return {
        "id": f"run-{event['run_id']}-{event['seq']}",
        "type": event["event_type"],
        "seq": event["seq"],
        "payload": event["payload"],
        "created_at": event["created_at"],
    }


class RunApiConsumer(RunConsumer):
    """For mobile clients: JSON messages, authenticated with an API key."""

    async def refuse(self, code: int) -> None:
        # Accepted first, so the close code reaches the client: 4401 (get a key) and 4403
        # (not your run) call for different things, and a refused handshake says neither.
        await self.accept()
        await self.close(code=code)

    async def deliver(self, events: list[dict[str, Any]]) -> None:
        for event in events:
            await self.send(text_data=json.dumps(api_message(event)))

    async def deliver_token(self, message: dict[str, Any]) -> None:
        payload = {k: message.get(k) for k in ("token", "phase", "step_index", "reasoning")}
        await self.send(
            text_data=json.dumps(
                {"id": None, "type": SocketMessage.STREAM_TOKEN, "payload": payload}
            )
        )

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        try:
            message = json.loads(text_data or "")
        except ValueError:
            message = None
        if isinstance(message, dict) and message.get("type") == SocketMessage.PING:
            await self.send(
                text_data=json.dumps(
                    {"id": message.get("id"), "type": SocketMessage.PONG, "payload": {}}
                )
            )
            return
        error = {
            "code": ErrorCode.VALIDATION_ERROR,
            "message": 'This stream only answers {"type": "ping"}',
        }
        await self.send(
            text_data=json.dumps({"id": None, "type": SocketMessage.ERROR, "payload": error})
        )


class DashboardConsumer(FollowsCredential, AsyncWebsocketConsumer):
    """The user's run list: a fresh row whenever one of their runs changes status."""

    user_id: int | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=UNAUTHORIZED)
            return
        self.user_id = user.pk
        await self.channel_layer.group_add(user_group(user.pk), self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if self.user_id is not None:
            await self.channel_layer.group_discard(user_group(self.user_id), self.channel_name)

    async def run_changed(self, message: dict[str, Any]) -> None:
        html = await database_sync_to_async(self.row)(message["run_id"])
        if html:
            await self.send(text_data=html)

    def row(self, run_id: int) -> str:
        run = Run.objects.filter(pk=run_id, owner_id=self.user_id).select_related("task").first()
        return fragments.render_run_row(run=run) if run else ""


class HeaderConsumer(FollowsCredential, AsyncWebsocketConsumer):
    """Every page's header, kept live: the MCP server panel whenever a server's status changes,
    and the count of approvals waiting for the user whenever one of their runs changes status
    (parking on an approval and every decision do)."""

    groups_joined: tuple[str, ...] = ()

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=UNAUTHORIZED)
            return
        self.groups_joined = (MCP_STATUS_GROUP, user_group(user.pk))
        for group in self.groups_joined:
            await self.channel_layer.group_add(group, self.channel_name)
        await self.accept()
        # Whatever changed since the page was rendered.
        await self.mcp_status({})
        await self.run_changed({})

    async def disconnect(self, code: int) -> None:
        for group in self.groups_joined:
            await self.channel_layer.group_discard(group, self.channel_name)

    async def mcp_status(self, message: dict[str, Any]) -> None:
        html = await database_sync_to_async(fragments.render_servers_panel)(user=self.scope["user"])
        await self.send(text_data=html)

    async def run_changed(self, message: dict[str, Any]) -> None:
        if not message.get("status_changed", True):
            return  # a step's progress: what waits for the user is the same
        html = await database_sync_to_async(fragments.render_approvals_count)(
            user_id=self.scope["user"].pk
        )
        await self.send(text_data=html)
