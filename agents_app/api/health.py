"""What GET /api/v1/health reports: database, Redis, a worker, the default LLM connection (asked
at most every few seconds: `connections.freshness`) and the MCP servers by state. Anyone may
ask, so it answers states ("ok", "error", "unreachable", "connected", "down", ...), never
reasons: why a service failed goes to the log (redacted, core.secrecy), where operators read
it, and for staff to `details` (the LLM's and each MCP server's reason and last check)."""

import logging
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from agents_app.connections.freshness import LLMState, default_connection_checked, llm_state
from agents_app.models import LLMConnection
from tools_app.models import MCPServer, ServerStatus

logger = logging.getLogger(__name__)


def _failed(service: str, exc: Exception) -> str:
    logger.warning("health: %s failed: %s: %s", service, type(exc).__name__, exc)
    return "error"


def check_database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return "ok"
    # No test takes the database away (tests/dialect_guard.py asks every other line here).
    except Exception as exc:  # pragma: no cover
        return _failed("database", exc)


def check_redis() -> str:
    import redis

    try:
        client = redis.Redis.from_url(
            settings.CELERY_BROKER_URL, socket_timeout=2, socket_connect_timeout=2
        )
        client.ping()
        return "ok"
    except Exception as exc:
        return _failed("redis", exc)


def check_worker(timeout: float = 1.0) -> str:
    from celery import current_app as app

    try:
        replies = app.control.ping(timeout=timeout)
    except Exception as exc:
        return _failed("worker ping", exc)
    return (
        f"ok ({len(replies)} worker{'s' if len(replies) != 1 else ''})"
        if replies
        else "unreachable"
    )


def _when(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def _llm_details(llm: LLMConnection | None) -> dict[str, Any]:
    if llm is None:
        return {
            "state": LLMState.NOT_CONFIGURED.value,
            "connection": None,
            "model": None,
            "reason": "No usable LLM connection: set LLM_BASE_URL and LLM_MODEL.",
            "checked_at": None,
        }
    return {
        "state": llm_state(llm).value,
        "connection": llm.name,
        "model": llm.model,
        "reason": llm.last_error,
        "checked_at": _when(llm.last_checked_at),
    }


def _server_details(server: MCPServer) -> dict[str, Any]:
    return {
        "name": server.name,
        "status": server.status,
        "reason": server.last_error if server.status == ServerStatus.BROKEN else "",
        "checked_at": _when(server.last_checked_at),
    }


def health(*, staff: bool = False) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body): 503 when the database or Redis fails, else 200 with `healthy` or,
    when the worker, the LLM or an MCP server is down, `degraded`. `staff` adds `details`."""
    services: dict[str, Any] = {"database": check_database(), "redis": check_redis()}
    llm = default_connection_checked() if services["database"] == "ok" else None
    services["llm"] = llm_state(llm).value
    servers = (
        list(MCPServer.objects.exclude(status=ServerStatus.DISABLED).order_by("name"))
        if services["database"] == "ok"
        else []
    )
    counts = {
        "active": sum(s.status == ServerStatus.ACTIVE for s in servers),
        "broken": sum(s.status == ServerStatus.BROKEN for s in servers),
        "unchecked": sum(s.status == ServerStatus.UNCHECKED for s in servers),
    }
    services["tool_registry"] = "degraded" if counts["broken"] else "ready"
    services["worker"] = check_worker() if services["redis"] == "ok" else "unreachable"
    critical_ok = services["database"] == "ok" and services["redis"] == "ok"
    healthy = (
        critical_ok
        and services["worker"].startswith("ok")
        and services["llm"] == LLMState.CONNECTED
        and not counts["broken"]
    )
    status = "healthy" if healthy else ("degraded" if critical_ok else "unhealthy")
    body: dict[str, Any] = {
        "status": status,
        "timestamp": timezone.now().isoformat(),
        "services": services,
        "mcp_servers": counts,
    }
    if staff:
        body["details"] = {
            "llm": _llm_details(llm),
            "mcp_servers": [_server_details(server) for server in servers],
        }
    return (200 if critical_ok else 503), body
