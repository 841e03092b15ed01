"""The append-only audit log."""

from typing import Any, NoReturn

from django.conf import settings
from django.db import models
from django.utils import timezone

from agents_app.models.runs import Run


class AuditLogIsAppendOnly(Exception):
    """Raised by every attempt to change or delete an AuditEvent."""


def _refuse(what: str) -> NoReturn:
    raise AuditLogIsAppendOnly(f"The audit log is append-only: {what} is not allowed")


class AuditInterface(models.TextChoices):
    WEB = "web", "web pages"
    API = "api", "REST API"
    MCP = "mcp", "MCP server"
    ADMIN = "admin", "admin"
    WORKER = "worker", "worker"


class AuditEventQuerySet(models.QuerySet):
    """Refuses every bulk change. Django's own cascades use the plain base manager, so deleting
    a user still nulls `actor` (the row and its actor_label stay)."""

    def update(self, **kwargs: Any) -> NoReturn:
        _refuse("updating audit events")

    def delete(self) -> NoReturn:
        _refuse("deleting audit events")

    def bulk_update(self, objs: Any, fields: Any, batch_size: int | None = None) -> NoReturn:
        _refuse("updating audit events")

    def bulk_create(self, objs: Any, *args: Any, **kwargs: Any) -> list[Any]:
        if kwargs.get("update_conflicts"):
            _refuse("bulk_create(update_conflicts=True)")
        return super().bulk_create(objs, *args, **kwargs)


class AuditEvent(models.Model):
    """One agent action or human act, written once (agents_app.core.audit.audit_record) and never
    changed or deleted."""

    created_at = models.DateTimeField(default=timezone.now, db_index=True, editable=False)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name="user",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Empty for the worker or the system, or once the user was deleted.",
    )
    actor_label = models.CharField(
        "actor",
        max_length=150,
        help_text='The username at the time, or "worker" / "system"; kept if the user goes.',
    )
    interface = models.CharField(max_length=10, choices=AuditInterface.choices)
    action = models.CharField(max_length=50, help_text="e.g. llm.call, tool.call, run.cancel")
    # No database constraint and DO_NOTHING: deleting a run leaves its audit rows untouched,
    # run_id still holding the deleted run's number (event.run then raises DoesNotExist).
    run = models.ForeignKey(
        Run,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    target = models.CharField(
        max_length=200, blank=True, help_text="What was acted on: a tool, a server, a file."
    )
    details = models.JSONField(default=dict, blank=True)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} by {self.actor_label} ({self.interface})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        # An explicit pk would make Django try an UPDATE of that row first: refused as well.
        if not self._state.adding or self.pk is not None:
            _refuse("changing an audit event")
        kwargs["force_insert"] = True
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse("deleting an audit event")

    def as_json(self) -> dict[str, Any]:
        """The row as one JSON object, as the exports write it."""
        return {
            "id": self.pk,
            "created_at": self.created_at.isoformat(),
            "actor_id": self.actor_id,
            "actor": self.actor_label,
            "interface": self.interface,
            "action": self.action,
            "run_id": self.run_id,
            "target": self.target,
            "details": self.details,
        }
