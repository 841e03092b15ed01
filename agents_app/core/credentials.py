"""When a credential ends, the streams opened with it end too. A key revoked (by its owner on the
Settings page, by staff in the admin, or however its row says so) or deleted, and a session
logged out, tell their group (`core.events.api_key_group` / `session_group`) once the change
has committed; every socket and SSE stream in that group, in whatever web process, closes with
4401 (agents_app/streaming/credentials.py). The receivers are connected in `apps.ready`."""

from typing import Any

from django.db import transaction

from agents_app.core.events import api_key_group, publish_credential_closed, session_group

REVOKED = "revoked"
DELETED = "deleted"
LOGGED_OUT = "logged_out"


def api_key_saved(sender: Any, instance: Any, **kwargs: Any) -> None:
    """post_save of an ApiKey: a revoked key's streams close once the revocation commits."""
    if instance.revoked and instance.key_hash:
        group = api_key_group(instance.key_hash)
        transaction.on_commit(lambda: publish_credential_closed(group, REVOKED))


def api_key_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    """post_delete of an ApiKey (also when its user is deleted)."""
    if instance.key_hash:
        group = api_key_group(instance.key_hash)
        transaction.on_commit(lambda: publish_credential_closed(group, DELETED))


def session_logged_out(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    """user_logged_out: the session's page sockets and streams close (Django sends it before
    it flushes the session, so the key is still there)."""
    session = getattr(request, "session", None)
    session_key = getattr(session, "session_key", None)
    if session_key:
        group = session_group(session_key)
        transaction.on_commit(lambda: publish_credential_closed(group, LOGGED_OUT))
