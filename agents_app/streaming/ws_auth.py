"""API-key authentication for WebSocket clients (`Authorization: Bearer adk_...`)."""

from typing import Any

from channels.db import database_sync_to_async
from django.contrib.auth.models import AnonymousUser

from agents_app.core.api_keys import user_for_api_key
from agents_app.models import ApiKey


class ApiKeyAuthMiddleware:
    """Sets scope["user"] from the Authorization header; no cookies are consulted, so a page
    on another site cannot ride on a browser's session (no Origin check needed here)."""

    def __init__(self, inner: Any):
        self.inner = inner

    async def __call__(self, scope: dict, receive: Any, send: Any) -> Any:
        headers = dict(scope.get("headers") or [])
        raw = headers.get(b"authorization", b"").decode("latin-1")
        scheme, _, token = raw.partition(" ")
        user = None
        if scheme.lower() == "bearer" and token.strip():
            user = await database_sync_to_async(user_for_api_key)(token.strip())
        scope = {**scope, "user": user or AnonymousUser()}
        if user is not None:  # the socket follows its key (streaming.credentials)
            scope["api_key_hash"] = ApiKey.hash(token.strip())
        return await self.inner(scope, receive, send)
