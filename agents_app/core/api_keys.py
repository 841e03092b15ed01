"""API keys for mobile and script clients: who a raw key belongs to. Keys are stored hashed
(`models.ApiKey`); REST, WebSockets and the MCP server all authenticate through here."""

from datetime import timedelta
from typing import Any

from django.utils import timezone

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
