"""The JSON shape of an LLM connection, for REST and pages. Never the key, nor its variable;
why it is broken only for staff: the reason may quote its server, whose words are staff's to
read (a gateway may echo what it was sent)."""

from typing import Any

from agents_app.models import LLMConnection

BROKEN_FOR_OTHERS = "The LLM connection is not working; staff can see why in the admin."


def connection_summary(connection: LLMConnection, *, staff: bool = False) -> dict[str, Any]:
    """The connection as `staff` (or anyone else) may see it."""
    reason = ""
    if connection.status == "broken":
        reason = connection.last_error if staff else BROKEN_FOR_OTHERS
    return {
        "id": connection.pk,
        "name": connection.name,
        "model": connection.model,
        "default": connection.is_default,
        "context_window": connection.context_window,
        "health": {
            "status": connection.status,
            "reason": reason,
            "checked_at": connection.last_checked_at,
        },
    }
