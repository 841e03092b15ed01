"""What the agents of a team say to each other (seed 001's AgentMessage): a head node and its
children, each a run, exchange typed messages with correlation ids; the run page shows them as
the tree's timeline."""

import uuid

from django.db import models
from django.utils import timezone


class MessageType(models.TextChoices):
    TASK_ASSIGNMENT = "task_assignment"
    TASK_RESULT = "task_result"
    CONTEXT_UPDATE = "context_update"
    STATUS_REQUEST = "status_request"
    STATUS_RESPONSE = "status_response"
    ERROR = "error"


class AgentMessage(models.Model):
    """One message between two runs of a tree. `root` is the tree's head (its timeline);
    `correlation_id` links an assignment to the status, context and result messages it led to."""

    root = models.ForeignKey(
        "agents_app.Run", on_delete=models.CASCADE, related_name="tree_messages"
    )
    sender = models.ForeignKey(
        "agents_app.Run", on_delete=models.CASCADE, related_name="sent_messages"
    )
    recipient = models.ForeignKey(
        "agents_app.Run", on_delete=models.CASCADE, related_name="received_messages"
    )
    from_agent = models.CharField(max_length=60)
    to_agent = models.CharField(max_length=60)
    type = models.CharField(max_length=20, choices=MessageType.choices)
    payload = models.JSONField(default=dict, blank=True)
    correlation_id = models.UUIDField(default=uuid.uuid4)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["root", "id"]
        indexes = [models.Index(fields=["root", "id"])]

    def __str__(self) -> str:
        return f"{self.from_agent} → {self.to_agent}: {self.type}"
