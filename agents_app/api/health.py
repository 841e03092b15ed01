"""What GET /api/v1/health reports: database, Redis, a worker, the LLM configuration. Anyone may
ask, so it answers states ("ok", "error", "unreachable"), never reasons: why a service failed
goes to the log (redacted, core.secrecy), where operators read it."""

import logging
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

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


def health() -> tuple[int, dict[str, Any]]:
    services = {
        "database": check_database(),
        "redis": check_redis(),
        "llm": "configured" if settings.LLM_BASE_URL and settings.LLM_MODEL else "not_configured",
        "tool_registry": "ready",
    }
    services["worker"] = check_worker() if services["redis"] == "ok" else "unreachable"
    critical_ok = services["database"] == "ok" and services["redis"] == "ok"
    healthy = (
        critical_ok and services["worker"].startswith("ok") and services["llm"] == "configured"
    )
    status = "healthy" if healthy else ("degraded" if critical_ok else "unhealthy")
    body = {"status": status, "timestamp": timezone.now().isoformat(), "services": services}
    return (200 if critical_ok else 503), body
