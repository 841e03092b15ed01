"""GET /api/v1/connections: the LLM connections a person may run a task on."""

from typing import Any

from django.http import HttpRequest
from ninja import Router, Schema

from agents_app.connections.presenters import connection_summary
from agents_app.connections.selectors import connections_enabled

router = Router(tags=["connections"])


class ConnectionList(Schema):
    success: bool = True
    connections: list[dict[str, Any]]


@router.get("/connections", response=ConnectionList, summary="List LLM connections")
def list_connections(request: HttpRequest):
    """The enabled LLM connections, the default first: id, name, model, default, context
    window and health (status ok | broken | unchecked, when; why it is broken for staff, a
    generic reason for others). Pass an id or name as `connection` when submitting a task.
    Never the API key."""
    staff = bool(getattr(request.user, "is_staff", False))
    return {"connections": [connection_summary(c, staff=staff) for c in connections_enabled()]}
