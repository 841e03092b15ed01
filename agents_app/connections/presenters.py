"""The JSON shape of an LLM connection, for REST and pages. Never the key, nor its variable."""

from typing import Any

from agents_app.models import LLMConnection


def connection_summary(connection: LLMConnection) -> dict[str, Any]:
    return {
        "id": connection.pk,
        "name": connection.name,
        "model": connection.model,
        "default": connection.is_default,
        "context_window": connection.context_window,
        "health": {
            "status": connection.status,
            "reason": connection.last_error if connection.status == "broken" else "",
            "checked_at": connection.last_checked_at,
        },
    }
