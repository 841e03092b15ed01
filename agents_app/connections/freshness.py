"""The default LLM connection's state as GET /api/v1/health and the header report it: the row's
health (`connections.health`), asked of the server again when it is older than FRESH_SECONDS.

The row is the cache every process shares: whoever finds it stale takes a short Redis lock and
probes (GET <base URL>/models, PROBE_TIMEOUT per phase), so any number of web processes polled
by any number of monitors ask the server at most about once every FRESH_SECONDS. The others
answer with the row as it is meanwhile. The probe's reason stays on the row, for staff only.
"""

import logging
from datetime import timedelta
from enum import StrEnum

import redis
from django.conf import settings
from django.utils import timezone

from agents_app.connections.health import connection_check
from agents_app.connections.services import connection_ensure_default
from agents_app.core.redis_client import shared_redis
from agents_app.core.slots import slot_key
from agents_app.models import ConnectionStatus, LLMConnection

logger = logging.getLogger(__name__)

# A stopped server shows as down within FRESH_SECONDS + PROBE_TIMEOUT (the issue asks ≤ 10 s).
FRESH_SECONDS = 5
PROBE_TIMEOUT = 2.0
# Held while one process probes; it expires by itself if that process dies mid-probe.
LOCK_SECONDS = 4


class LLMState(StrEnum):
    CONNECTED = "connected"
    DOWN = "down"
    UNCHECKED = "unchecked"  # only while another process's first probe is under way
    NOT_CONFIGURED = "not_configured"


STATE_OF_STATUS = {
    ConnectionStatus.OK: LLMState.CONNECTED,
    ConnectionStatus.BROKEN: LLMState.DOWN,
    ConnectionStatus.UNCHECKED: LLMState.UNCHECKED,
}


def llm_state(connection: LLMConnection | None) -> LLMState:
    """The state a connection's row says it is in (no probe)."""
    if connection is None or not connection.usable:
        return LLMState.NOT_CONFIGURED
    return STATE_OF_STATUS[ConnectionStatus(connection.status)]


def default_connection() -> LLMConnection | None:
    """The default connection, or None when no usable one is configured."""
    connection = connection_ensure_default()
    return connection if connection is not None and connection.usable else None


def _redis() -> redis.Redis:
    return shared_redis(settings.CHANNEL_LAYERS["default"]["CONFIG"]["hosts"][0]["address"])


def _stale(connection: LLMConnection) -> bool:
    checked = connection.last_checked_at
    return checked is None or timezone.now() - checked >= timedelta(seconds=FRESH_SECONDS)


def _probe_is_mine(connection: LLMConnection) -> bool:
    # A row never checked is probed whatever the lock says: nothing else can answer for it.
    if connection.status == ConnectionStatus.UNCHECKED:
        return True
    try:
        key = slot_key("health", "llm", connection.pk)
        return bool(_redis().set(key, "1", nx=True, ex=LOCK_SECONDS))
    except redis.RedisError as exc:
        # Without Redis each process probes for itself, still at most once per FRESH_SECONDS.
        logger.warning("health: the probe lock failed: %s: %s", type(exc).__name__, exc)
        return True


def default_connection_checked() -> LLMConnection | None:
    """The default connection with its health no older than FRESH_SECONDS: probed now when it
    was older and no other process is probing it (then as the row last said). None when no
    usable connection is configured. Never raises for the server's sake and waits at most
    PROBE_TIMEOUT per phase of the request."""
    connection = default_connection()
    if connection is None or not _stale(connection) or not _probe_is_mine(connection):
        return connection
    connection_check(connection, timeout=PROBE_TIMEOUT)
    connection.refresh_from_db(fields=["status", "last_error", "last_checked_at"])
    return connection
