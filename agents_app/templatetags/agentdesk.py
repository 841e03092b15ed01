"""Small filters the pages share."""

from django import template

from agents_app.models import RunStatus

register = template.Library()

STATUS_LABELS = {
    RunStatus.WAITING_APPROVAL: "waiting for approval",
    RunStatus.PAUSED: "paused",
}


@register.filter
def status_label(status: str) -> str:
    """A run, step or call status as people read it (`waiting_approval` → waiting for approval)."""
    return STATUS_LABELS.get(status, str(status).replace("_", " "))
