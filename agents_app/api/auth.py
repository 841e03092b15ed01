"""API keys for mobile and script clients: `Authorization: Bearer adk_...`, stored hashed."""

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja.security import APIKeyCookie, HttpBearer

from agents_app.core.api_keys import user_for_api_key
from agents_app.core.throttle import Throttled, request_address


class ApiKeyAuth(HttpBearer):
    def __call__(self, request: HttpRequest) -> Any | None:
        # ninja's HttpBearer logs any other scheme's whole header at ERROR when DEBUG is on;
        # the header is a credential (Basic's is a password), so it is read here unlogged.
        scheme, _, token = request.headers.get(self.header, "").partition(" ")
        if scheme.lower() != self.openapi_scheme:
            return None
        return self.authenticate(request, token)

    def authenticate(self, request: HttpRequest, token: str) -> Any | None:
        # Raises throttle.Throttled (429, Retry-After) once this address had too many refused.
        user = user_for_api_key(token, address=request_address(request))
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


def caller_or_none(request: HttpRequest) -> Any | None:
    """Who calls an endpoint anyone may call (auth=None) but that tells some callers more: the
    logged-in user or a bearer key's owner, else None. A refused key, throttled or not, makes
    an anonymous caller there, never an error (a monitor with an old key still hears health)."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return user
    try:
        return ApiKeyAuth()(request)
    except Throttled:
        return None
