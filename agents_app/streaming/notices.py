"""Notices for the browser's own notifications (static/agentdesk/notifications.js): a page whose
person opted in opens `/ws/notices/` and hears, as JSON, when one of their runs starts waiting
for them. Session auth and the Origin check as for every page socket; only the user's own
runs, read from the table, never from the message."""

from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.urls import reverse

from agents_app.approvals.selectors import approval_pending_for_run
from agents_app.core.events import CREDENTIAL_CLOSED, user_group
from agents_app.models import ApprovalKind, Run, RunStatus
from agents_app.streaming.credentials import FollowsCredential
from agents_app.streaming.messages import SocketMessage

TASK_PREVIEW_CHARS = 120
UNAUTHORIZED = 4401


def approval_notice(*, user_id: int, run_id: int) -> dict[str, Any] | None:
    """What to tell the user about their run `run_id` if it waits for them now, else None.
    The tag is the approval's, so several tabs or a repeated message show one notification."""
    run = (
        Run.objects.filter(pk=run_id, owner_id=user_id, status=RunStatus.WAITING_APPROVAL)
        .select_related("task")
        .first()
    )
    approval = approval_pending_for_run(run) if run else None
    if approval is None:
        return None
    text = " ".join(run.task.text.split())
    if len(text) > TASK_PREVIEW_CHARS:
        text = text[: TASK_PREVIEW_CHARS - 1] + "…"
    asks = "its plan" if approval.kind == ApprovalKind.PLAN else approval.tool
    return {
        "type": SocketMessage.APPROVAL_WAITING,
        "run_id": run.pk,
        "approval_id": approval.pk,
        "url": reverse("run_detail", args=[run.pk]),
        "title": f"Run {run.pk} waits for your approval",
        "body": f"{asks}: {text}",
        "tag": f"agentdesk-approval-{approval.pk}",
    }


class NoticeConsumer(FollowsCredential, AsyncJsonWebsocketConsumer):
    user_id: int | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=UNAUTHORIZED)
            return
        self.user_id = user.pk
        self.told: set[int] = set()
        await self.channel_layer.group_add(user_group(user.pk), self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if self.user_id is not None:
            await self.channel_layer.group_discard(user_group(self.user_id), self.channel_name)

    async def dispatch(self, message: dict[str, Any]) -> None:
        # The user group carries messages for other consumers too; one this consumer has no
        # handler for is not its business, not an error that would close the socket.
        if message["type"].startswith("websocket.") or message["type"] in (
            "run.changed",
            CREDENTIAL_CLOSED,
        ):
            await super().dispatch(message)

    async def run_changed(self, message: dict[str, Any]) -> None:
        if not message.get("status_changed", True):
            return  # a step's progress: nothing new waits
        notice = await database_sync_to_async(approval_notice)(
            user_id=self.user_id, run_id=message["run_id"]
        )
        # Every status message is answered from the table as it is now, so several (a backlog
        # read late) can find the same approval: it is told once.
        if notice is not None and notice["approval_id"] not in self.told:
            self.told.add(notice["approval_id"])
            await self.send_json(notice)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Nothing to receive: the socket only tells, and ignores whatever a client sends."""
