"""Tasks over the API socket (`ws/api/tasks/`, API key): seed 000's WebSocket protocol.

Every message is `{"id", "type", "payload"}`. The client sends

    {"id": "t1", "type": "task_request", "payload": {"task": "…", "context": {…},
     "stream_responses": true, …REST's task options}}
    {"id": "p1", "type": "ping"}

and the server answers each task_request, on the same socket, with messages carrying the
request's `id` and the run's `run_id`:

    task_accepted    {run_id, status, links}                 the run is queued (REST's 202)
    stream_token     {token, step_index, phase, reasoning}   the model's output as it comes
    progress_update  {current_step, total_steps, status, percent}   after the plan and each
                     step, and whenever the run's status changes (waiting_approval, …)
    error            {code, message, http_status, details, trace_id, timestamp}   the run failed
    result           the AgentResult, last

A request the server refuses gets one `error` message with its `id`: VALIDATION_ERROR naming
the field in `details.field` ("type", "payload", "payload.task", …) for a malformed message,
the service's own codes otherwise (RATE_LIMITED when the person has too many runs waiting, as
over REST: the submission is `runs.services.task_submit`). The socket stays open either way.

Events are replayed from the run's first one (streaming.feeds), so none is missed between the
submission and the socket joining the run's group; tokens are best effort, as everywhere.
Several tasks may run on one socket at once; the socket leaves a run's group after its result.
"""

import json
from dataclasses import dataclass, field
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from agents_app.core.errors import DomainError, ErrorCode, error_detail
from agents_app.core.events import EventType, run_group
from agents_app.models import AuditInterface, Run
from agents_app.runs import services
from agents_app.runs.presenters import run_links
from agents_app.streaming.credentials import FollowsCredential
from agents_app.streaming.feeds import RunFeed
from agents_app.streaming.messages import SocketMessage

UNAUTHORIZED = 4401

# A task_request's payload: REST's task options (but `wait`: the socket streams instead) and
# seed 000's `stream_responses`. Each is checked by task_submit as for REST.
SUBMIT_OPTIONS = (
    "context",
    "max_tokens",
    "max_tool_calls",
    "approval_timeout",
    "approval_on_timeout",
    "fast_path",
    "connection",
    "close_policy",
)
FLAGS = ("stream_responses", "approve_plan", "team")
PAYLOAD_FIELDS = frozenset({"task", *SUBMIT_OPTIONS, *FLAGS})


class Malformed(Exception):
    """A message the socket cannot take: VALIDATION_ERROR naming `field`."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass
class Followed:
    """A run this socket submitted and streams until its result."""

    request_id: Any
    feed: RunFeed
    stream_tokens: bool
    # The last progress_update's payload: a change of status is told in the same shape.
    progress: dict[str, Any] = field(
        default_factory=lambda: {"current_step": 0, "total_steps": 0, "percent": 0}
    )


def _request(message: Any) -> tuple[Any, str, dict[str, Any]]:
    """(id, type, payload) of a client's message. Raises Malformed naming what is wrong."""
    if not isinstance(message, dict):
        raise Malformed("message", 'A message is a JSON object {"id", "type", "payload"}')
    kind = message.get("type")
    if kind not in (SocketMessage.PING, SocketMessage.TASK_REQUEST):
        raise Malformed("type", 'type is "task_request" or "ping"')
    payload = message.get("payload", {})
    if not isinstance(payload, dict):
        raise Malformed("payload", "payload is a JSON object")
    if kind == SocketMessage.TASK_REQUEST:
        if "task" not in payload:
            raise Malformed("payload.task", "payload.task is required: what the agent should do")
        if unknown := sorted(set(payload) - PAYLOAD_FIELDS):
            raise Malformed(f"payload.{unknown[0]}", f"payload.{unknown[0]} is not a task option")
        for name in FLAGS:
            if not isinstance(payload.get(name, False), bool):
                raise Malformed(f"payload.{name}", f"payload.{name} must be true or false")
    return message.get("id"), kind, payload


@database_sync_to_async
def _submit(user: Any, payload: dict[str, Any]) -> Run:
    """The REST submission, with its validation, limits and error codes."""
    return services.task_submit(
        owner=user,
        interface=AuditInterface.API,
        text=payload["task"],
        approve_plan=payload.get("approve_plan", False),
        team=payload.get("team", False),
        **{name: payload[name] for name in SUBMIT_OPTIONS if name in payload},
    )


def _progress_follows(events: list[dict[str, Any]]) -> bool:
    """A progress_update later in the batch says the new status itself (the plan's start)."""
    return any(e["event_type"] == EventType.PROGRESS_UPDATE for e in events)


class TaskApiConsumer(FollowsCredential, AsyncWebsocketConsumer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.followed: dict[int, Followed] = {}

    async def connect(self) -> None:
        user = self.scope.get("user")
        await self.accept()
        if user is None or not user.is_authenticated:
            # Accepted first, so the close code reaches the client, as the run socket does.
            await self.close(code=UNAUTHORIZED)

    async def disconnect(self, code: int) -> None:
        for run_id in list(self.followed):
            await self.channel_layer.group_discard(run_group(run_id), self.channel_name)

    async def send_message(
        self, request_id: Any, kind: str, payload: dict[str, Any], run_id: int | None = None
    ) -> None:
        message = {"id": request_id, "type": kind, "payload": payload}
        if run_id is not None:
            message["run_id"] = run_id
        await self.send(text_data=json.dumps(message, ensure_ascii=False))

    async def send_error(self, request_id: Any, error: DomainError) -> None:
        payload = error_detail(error.code, error.message, error.details)
        await self.send_message(request_id, SocketMessage.ERROR, payload)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        try:
            message = json.loads(text_data or "")
        except ValueError:
            message = None
        request_id = message.get("id") if isinstance(message, dict) else None
        try:
            request_id, kind, payload = _request(message)
        except Malformed as malformed:
            error = DomainError(
                ErrorCode.VALIDATION_ERROR, malformed.message, {"field": malformed.field}
            )
            await self.send_error(request_id, error)
            return
        if kind == SocketMessage.PING:
            await self.send_message(request_id, SocketMessage.PONG, {})
            return
        try:
            run = await _submit(self.scope["user"], payload)
        except DomainError as error:
            field_name = error.details.get("field") if isinstance(error.details, dict) else None
            if field_name:  # the service names the option; the socket names it in the message
                error.details = {**error.details, "field": f"payload.{field_name}"}
            await self.send_error(request_id, error)
            return
        await self.follow(run, request_id, stream_tokens=payload.get("stream_responses", True))

    async def follow(self, run: Run, request_id: Any, *, stream_tokens: bool) -> None:
        """Join the run's group, say it is accepted, then send its events from the first."""
        followed = Followed(request_id, RunFeed(run.pk, 0), stream_tokens)
        self.followed[run.pk] = followed
        await self.channel_layer.group_add(run_group(run.pk), self.channel_name)
        accepted = {"run_id": run.pk, "status": run.status, "links": run_links(run)}
        await self.send_message(request_id, SocketMessage.TASK_ACCEPTED, accepted, run.pk)
        await self.deliver(run.pk, await followed.feed.backlog())

    async def run_events(self, message: dict[str, Any]) -> None:
        followed = self.followed.get(message.get("run_id"))
        if followed is not None:
            await self.deliver(followed.feed.run_id, await followed.feed.live(message))

    async def run_token(self, message: dict[str, Any]) -> None:
        followed = self.followed.get(message.get("run_id"))
        if followed is None or not followed.stream_tokens:
            return
        payload = {k: message.get(k) for k in ("token", "step_index", "phase", "reasoning")}
        await self.send_message(
            followed.request_id, SocketMessage.STREAM_TOKEN, payload, followed.feed.run_id
        )

    async def deliver(self, run_id: int, events: list[dict[str, Any]]) -> None:
        """The events seed 000 has a message for, in its shapes; after the result, leave."""
        followed = self.followed.get(run_id)
        if followed is None:
            return
        for n, event in enumerate(events):
            kind, payload = event["event_type"], event["payload"]
            if kind == EventType.PROGRESS_UPDATE:
                followed.progress = dict(payload)
                await self.send_message(
                    followed.request_id, SocketMessage.PROGRESS_UPDATE, payload, run_id
                )
            elif kind == EventType.RUN_STATUS and not _progress_follows(events[n + 1 :]):
                progress = {**followed.progress, "status": payload["status"]}
                await self.send_message(
                    followed.request_id, SocketMessage.PROGRESS_UPDATE, progress, run_id
                )
            elif kind == EventType.ERROR:
                code = payload.get("code") or ErrorCode.INTERNAL_ERROR
                error = error_detail(code, payload.get("message", ""), payload.get("details"))
                await self.send_message(followed.request_id, SocketMessage.ERROR, error, run_id)
            elif kind == EventType.RESULT:
                await self.send_message(followed.request_id, SocketMessage.RESULT, payload, run_id)
                del self.followed[run_id]
                await self.channel_layer.group_discard(run_group(run_id), self.channel_name)
                return
