"""API keys for mobile and script clients: `Authorization: Bearer adk_...`, stored hashed."""

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.utils import timezone
from ninja.security import APIKeyCookie, HttpBearer

from agents_app.models import ApiKey

LAST_USED_RESOLUTION = timedelta(minutes=1)


def user_for_api_key(raw_key: str) -> Any | None:
    """The active user owning this unrevoked key, or None."""
    key = (
        ApiKey.objects.select_related("user")
        .filter(key_hash=ApiKey.hash(raw_key), revoked=False, user__is_active=True)
        .first()
    )
    if key is None:
        return None
    now = timezone.now()
    if key.last_used_at is None or now - key.last_used_at > LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
    return key.user


class ApiKeyAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> Any | None:
        user = user_for_api_key(token)
        if user is not None:
            request.user = user
        return user


class SessionAuth(APIKeyCookie):
    """Django's login session, CSRF-checked. Unlike ninja's `django_auth` it checks CSRF only
    for a logged-in session: without one there is nothing a forged request could ride on, and
    an anonymous client or one with a revoked key must hear 401, not "CSRF check Failed"."""

    param_name = settings.SESSION_COOKIE_NAME

    def __call__(self, request: HttpRequest) -> Any | None:
        if not request.user.is_authenticated:
            return None
        return super().__call__(request)

    def authenticate(self, request: HttpRequest, key: str | None) -> Any | None:
        return request.user
