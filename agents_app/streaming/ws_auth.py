"""API-key authentication for WebSocket clients (`Authorization: Bearer adk_...`)."""

from typing import Any

from channels.db import database_sync_to_async
from django.contrib.auth.models import AnonymousUser

from agents_app.core.api_keys import user_for_api_key
from agents_app.core.throttle import Throttled, scope_address
from agents_app.models import ApiKey

# The close code of a socket whose address had too many keys refused (HTTP's 429, as 4401 is
# 401): wait, then try again.
TOO_MANY_FAILURES = 4429


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
            try:
                user = await database_sync_to_async(user_for_api_key)(
                    token.strip(), address=scope_address(scope)
                )
            except Throttled:
                return await _refuse_throttled(receive, send)
        scope = {**scope, "user": user or AnonymousUser()}
        if user is not None:  # the socket follows its key (streaming.credentials)
            scope["api_key_hash"] = ApiKey.hash(token.strip())
        return await self.inner(scope, receive, send)


async def _refuse_throttled(receive: Any, send: Any) -> None:
    """Accept, then close with TOO_MANY_FAILURES: a refused handshake would carry no code (the
    API sockets' 4401 and 4403 reach their clients the same way)."""
    message = await receive()
    if message["type"] == "websocket.connect":
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.close", "code": TOO_MANY_FAILURES})
