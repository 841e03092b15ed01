"""Throttling of failed sign-ins and refused API keys, counted in Redis.

The counts live in the Redis every process already shares (REDIS_URL), so any number of web
processes on any number of machines add to the same counters. Each counter is a fixed window:
the first count starts it with a time to live of AUTH_FAILURE_WINDOW_SECONDS, and one Lua script
adds and sets that expiry in one atomic step (a key never lives without one).

- **Sign-in** (`/login/`, `/admin/login/`): an attempt is counted before the password is
  checked, so any number of simultaneous attempts get at most the limit between them; a success
  takes its own attempt back. Two counters: per account and address (LOGIN_FAILURE_LIMIT, low)
  and per address across accounts (LOGIN_FAILURE_ADDRESS_LIMIT, higher). There is no count per
  account across addresses: an attacker elsewhere can never lock a person out of their own
  address, which costs a botnet's guesses LOGIN_FAILURE_LIMIT per address per window.
- **API keys** (REST, MCP): a refused key counts against its address (API_KEY_FAILURE_LIMIT);
  once over, every key from there is refused with RATE_LIMITED before it is looked up, a valid
  one too. A valid key counts nothing, so the check costs one read of Redis per request.

"Address" is the connection's (REMOTE_ADDR), or with TRUSTED_PROXY_COUNT proxies in front the
X-Forwarded-For entry the outermost of them saw; an IPv6 address counts as its /64, which one
machine usually holds whole. A limit of 0 turns its counter off. A Redis that cannot be reached
throttles nothing (logged): it must not lock everybody out of the pages that would show why.
"""

import hashlib
import ipaddress
import logging
import math
from functools import lru_cache
from typing import Any

import redis
from django.conf import settings
from django.http import HttpRequest

from agents_app.core import audit
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.redis_client import shared_redis

logger = logging.getLogger(__name__)

LOGIN_FAIL = "login.fail"
LOGIN_THROTTLE = "login.throttle"
API_KEY_REFUSE = "api_key.refuse"
# Who tried: nobody signed in.
ANONYMOUS_LABEL = "anonymous"

# KEYS: counters; ARGV[1]: the amount to add, ARGV[2]: the window in seconds.
# Returns each counter's new count and seconds left, flattened.
_ADD = """
local out = {}
for _, key in ipairs(KEYS) do
  local count = redis.call('INCRBY', key, ARGV[1])
  local ttl = redis.call('TTL', key)
  if ttl < 0 then
    redis.call('EXPIRE', key, ARGV[2])
    ttl = tonumber(ARGV[2])
  end
  table.insert(out, count)
  table.insert(out, ttl)
end
return out
"""


class Throttled(DomainError):
    """Too many failures from here: wait `retry_after` seconds (RATE_LIMITED, 429)."""

    def __init__(self, message: str, retry_after: int):
        super().__init__(ErrorCode.RATE_LIMITED, message, {"retry_after_seconds": retry_after})
        self.retry_after = retry_after


def _redis() -> redis.Redis:
    return shared_redis(settings.REDIS_URL or "redis://127.0.0.1:6379/0")


@lru_cache(maxsize=4)
def _add_script(client: redis.Redis) -> Any:
    return client.register_script(_ADD)


def _add(keys: list[str], amount: int) -> list[tuple[int, int]]:
    """Add `amount` to each counter; (count, seconds left) of each. Raises redis.RedisError."""
    flat = _add_script(_redis())(keys=keys, args=[amount, settings.AUTH_FAILURE_WINDOW_SECONDS])
    return [(int(flat[i]), int(flat[i + 1])) for i in range(0, len(flat), 2)]


def _peek(key: str) -> tuple[int, int]:
    with _redis().pipeline(transaction=False) as pipe:
        pipe.get(key)
        pipe.ttl(key)
        count, ttl = pipe.execute()
    return int(count or 0), max(int(ttl), 0)


def key_prefix() -> str:
    """Every counter's key starts with this (deployments sharing a Redis keep theirs apart)."""
    return f"{settings.THROTTLE_REDIS_PREFIX}:"


def _account_key(username: str, address: str) -> str:
    # Hashed: Redis holds no account names, and a name of any length makes a short key.
    account = hashlib.sha256(username.casefold().encode()).hexdigest()[:32]
    return f"{key_prefix()}login:{address}:{account}"


def _address_key(kind: str, address: str) -> str:
    return f"{key_prefix()}{kind}:{address}"


# --- Addresses -----------------------------------------------------------------------------


def client_address(remote_addr: str, forwarded_for: str = "") -> str:
    """The address a request is counted against: REMOTE_ADDR, or the X-Forwarded-For entry
    that the outermost of TRUSTED_PROXY_COUNT proxies saw (entries to its left are the
    client's to write); an IPv6 address as its /64."""
    address = remote_addr.strip()
    hops = settings.TRUSTED_PROXY_COUNT
    if hops:
        chain = [entry.strip() for entry in forwarded_for.split(",") if entry.strip()]
        if chain:
            address = chain[max(len(chain) - hops, 0)]
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address[:64] or "unknown"
    if ip.version == 6:
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def request_address(request: HttpRequest) -> str:
    return client_address(
        request.META.get("REMOTE_ADDR") or "", request.META.get("HTTP_X_FORWARDED_FOR") or ""
    )


def scope_address(scope: dict) -> str:
    """`request_address` for an ASGI scope (the MCP endpoint, sockets)."""
    client = scope.get("client") or ("", 0)
    headers = dict(scope.get("headers") or [])
    forwarded = headers.get(b"x-forwarded-for", b"").decode("latin-1")
    return client_address(client[0] or "", forwarded)


def _wait_message(what: str, seconds: int) -> str:
    minutes = max(math.ceil(seconds / 60), 1)
    return f"{what} Wait {minutes} minute{'s' if minutes != 1 else ''} and try again."


# --- Sign-in -------------------------------------------------------------------------------


def login_attempt(*, username: str, address: str, interface: str) -> None:
    """Count one sign-in attempt as `username` from `address` before its password is checked.
    Raises Throttled when either counter is over its limit (the right password is refused
    too); the first refusal of a window is audited (`login.throttle`)."""
    limits = [settings.LOGIN_FAILURE_LIMIT, settings.LOGIN_FAILURE_ADDRESS_LIMIT]
    keys = [_account_key(username, address), _address_key("login-address", address)]
    try:
        counts = _add(keys, 1)
    except redis.RedisError as error:
        logger.warning("sign-in throttle: Redis unavailable, not counting: %s", error)
        return
    over = [
        (count, ttl, limit)
        for (count, ttl), limit in zip(counts, limits, strict=True)
        if 0 < limit < count
    ]
    if not over:
        return
    retry_after = max(ttl for _, ttl, _ in over)
    if any(count == limit + 1 for count, _, limit in over):
        audit.audit_record(
            action=LOGIN_THROTTLE,
            interface=interface,
            actor_label=ANONYMOUS_LABEL,
            target=username,
            details={"address": address, "retry_after_seconds": retry_after},
        )
    raise Throttled(
        _wait_message("Too many failed sign-ins from your address.", retry_after), retry_after
    )


def login_failed(*, username: str, address: str, interface: str) -> None:
    """Audit a refused sign-in (`login.fail`): the account name tried and the address, never
    the password. Its attempt was counted by `login_attempt`."""
    audit.audit_record(
        action=LOGIN_FAIL,
        interface=interface,
        actor_label=ANONYMOUS_LABEL,
        target=username,
        details={"address": address},
    )


def login_succeeded(*, username: str, address: str) -> None:
    """Take back the attempt of a sign-in that succeeded: the account's earlier failures from
    this address are forgotten, the address's count across accounts goes down by one."""
    try:
        _redis().delete(_account_key(username, address))
        _add([_address_key("login-address", address)], -1)
    except redis.RedisError as error:
        logger.warning("sign-in throttle: Redis unavailable: %s", error)


# --- API keys ------------------------------------------------------------------------------


def api_key_gate(address: str) -> None:
    """Raises Throttled when `address` had more than API_KEY_FAILURE_LIMIT keys refused in
    the window: then no key from it is looked up, a valid one neither."""
    limit = settings.API_KEY_FAILURE_LIMIT
    if not limit:
        return
    try:
        count, ttl = _peek(_address_key("api-key", address))
    except redis.RedisError as error:
        logger.warning("API key throttle: Redis unavailable, not checking: %s", error)
        return
    if count >= limit:
        raise Throttled(
            _wait_message("Too many refused API keys from your address.", ttl or 1), ttl or 1
        )


def api_key_refused(*, address: str, interface: str, api_key_id: int | None = None) -> None:
    """Count a refused key against `address` and audit it (`api_key.refuse`: the address, and
    the id of the stored key when it was a revoked one or its owner is inactive; never the
    key)."""
    try:
        _add([_address_key("api-key", address)], 1)
    except redis.RedisError as error:
        logger.warning("API key throttle: Redis unavailable, not counting: %s", error)
    audit.audit_record(
        action=API_KEY_REFUSE,
        interface=interface,
        actor_label=ANONYMOUS_LABEL,
        details={"address": address, "api_key_id": api_key_id},
    )
