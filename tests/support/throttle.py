"""The Redis counters of failed sign-ins and refused keys (agents_app/core/throttle.py)."""

from functools import lru_cache

import redis
from django.conf import settings
from django.http import HttpResponse
from django.test import Client


@lru_cache(maxsize=4)
def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url)


def throttle_keys() -> list[str]:
    """Every throttle counter this test process's web requests and stacks have made."""
    client = _client(settings.REDIS_URL)
    return sorted(k.decode() for k in client.scan_iter(f"{settings.THROTTLE_REDIS_PREFIX}:*"))


def seconds_left(key: str) -> int:
    """The time to live of a counter (-1: none, -2: no such key)."""
    return _client(settings.REDIS_URL).ttl(key)


def clear_throttle_counts() -> None:
    keys = throttle_keys()
    if keys:
        _client(settings.REDIS_URL).delete(*keys)


def sign_in(path: str, username: str, password: str, address: str = "127.0.0.1") -> HttpResponse:
    """POST a sign-in form at `path` (/login/ or /admin/login/) as a browser at `address`."""
    return Client().post(path, {"username": username, "password": password}, REMOTE_ADDR=address)


def signed_in(response: HttpResponse) -> bool:
    """Whether the sign-in answered by `response` started a session (a form error does not)."""
    return response.status_code == 302 and settings.SESSION_COOKIE_NAME in response.cookies
