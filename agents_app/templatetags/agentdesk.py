"""Small filters the pages share."""

from django import template

register = template.Library()

STATUS_LABELS = {
    "waiting_approval": "waiting for approval",
    "paused": "paused",
}


@register.filter
def status_label(status: str) -> str:
    """A run, step or call status as people read it (`waiting_approval` → waiting for approval)."""
    return STATUS_LABELS.get(status, str(status).replace("_", " "))
