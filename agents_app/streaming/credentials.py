"""Sockets and streams follow the credential they were opened with: an API key, or the login
session of a page. Each joins its credential's group (`core.events.api_key_group` /
`session_group`); when the credential ends, `core.credentials` sends `credential.closed` to
that group and every socket closes with 4401, every SSE stream ends, in every web process.

Joining happens after the credential was checked, so a credential that ends in between would
miss its notice: after joining, the credential is checked once more."""

from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async
from django.contrib.auth import SESSION_KEY
from django.http import HttpRequest

from agents_app.core.events import api_key_group, session_group
from agents_app.models import ApiKey

# The close code of a socket whose credential ended: as for a socket opened without one.
UNAUTHORIZED = 4401


@dataclass(frozen=True)
class Credential:
    """The key (its SHA-256) or the session (its key) a stream was opened with."""

    group: str
    key_hash: str = ""
    session: Any = None  # a SessionStore, for a page's session
    session_key: str = ""

    @classmethod
    def of_key(cls, key_hash: str) -> "Credential":
        return cls(group=api_key_group(key_hash), key_hash=key_hash)

    @classmethod
    def of_session(cls, session: Any, session_key: str) -> "Credential":
        return cls(group=session_group(session_key), session=session, session_key=session_key)

    def alive(self) -> bool:
        """Whether it still authenticates: the key unrevoked, the session not logged out."""
        if self.key_hash:
            return ApiKey.objects.filter(key_hash=self.key_hash, revoked=False).exists()
        return bool(self.session.exists(self.session_key))


def bearer_token(raw: str) -> str:
    scheme, _, token = raw.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def request_credential(request: HttpRequest) -> Credential | None:
    """The credential an authenticated API request came with: its valid key, else its login
    session (the API tries the key first, then the session)."""
    token = bearer_token(request.headers.get("Authorization", ""))
    if token:
        key_hash = ApiKey.hash(token)
        if ApiKey.objects.filter(key_hash=key_hash, revoked=False).exists():
            return Credential.of_key(key_hash)
    session = getattr(request, "session", None)
    if session is not None and session.session_key and session.get(SESSION_KEY):
        return Credential.of_session(session, session.session_key)
    return None


def scope_credential(scope: dict[str, Any]) -> Credential | None:
    """The credential a socket's user was authenticated with: the API key
    (streaming.ws_auth puts its hash in the scope) or the page's session."""
    user = scope.get("user")
    if user is None or not user.is_authenticated:
        return None
    if scope.get("api_key_hash"):
        return Credential.of_key(scope["api_key_hash"])
    session = scope.get("session")
    session_key = getattr(session, "session_key", None) if session is not None else None
    return Credential.of_session(session, session_key) if session_key else None


credential_alive = database_sync_to_async(lambda credential: credential.alive())


class FollowsCredential:
    """For a WebSocket consumer (before AsyncWebsocketConsumer in its bases): the socket joins
    its credential's group with its other groups, and closes with 4401 when the credential
    ends (a `credential.closed` message) or has ended while it connected."""

    credential: Credential | None = None
    accepted = False
    closing = False

    async def websocket_connect(self, message: dict[str, Any]) -> None:
        self.credential = scope_credential(self.scope)
        if self.credential is not None:
            # Joined (and left) by the consumer's base class, before connect() runs.
            self.groups = [*self.groups, self.credential.group]
        await super().websocket_connect(message)
        joined = self.credential is not None and self.accepted and not self.closing
        if joined and not await credential_alive(self.credential):
            await self.close(code=UNAUTHORIZED)

    async def accept(self, *args: Any, **kwargs: Any) -> None:
        self.accepted = True
        await super().accept(*args, **kwargs)

    async def close(self, *args: Any, **kwargs: Any) -> None:
        self.closing = True
        await super().close(*args, **kwargs)

    async def credential_closed(self, message: dict[str, Any]) -> None:
        if not self.closing:
            await self.close(code=UNAUTHORIZED)
