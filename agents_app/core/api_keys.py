"""API keys for mobile and script clients: who a raw key belongs to, and a person's own keys
(create, list, revoke). Keys are stored hashed (`models.ApiKey`); REST, WebSockets and the MCP
server all authenticate through here."""

from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from agents_app.core import audit, throttle
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.models import ApiKey, AuditInterface

LAST_USED_RESOLUTION = timedelta(minutes=1)
# Enough for every phone, laptop and script a person runs; a key per request is a mistake.
MAX_ACTIVE_KEYS = 20
NAME_MAX_CHARS = ApiKey._meta.get_field("name").max_length


def user_for_api_key(
    raw_key: str, *, address: str | None = None, interface: str = AuditInterface.API
) -> Any | None:
    """The active user owning this unrevoked key, or None.

    With the caller's `address` (core.throttle.client_address) the key is throttled: raises
    throttle.Throttled once the address had too many keys refused, before looking this one
    up; a key refused here counts against the address and is audited (`api_key.refuse`)."""
    if address is not None:
        throttle.api_key_gate(address)
    key_hash = ApiKey.hash(raw_key)
    key = (
        ApiKey.objects.select_related("user")
        .filter(key_hash=key_hash, revoked=False, user__is_active=True)
        .first()
    )
    if key is None:
        if address is not None:
            stored = ApiKey.objects.filter(key_hash=key_hash).values_list("pk", flat=True)
            throttle.api_key_refused(
                address=address, interface=interface, api_key_id=stored.first()
            )
        return None
    now = timezone.now()
    if key.last_used_at is None or now - key.last_used_at > LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
    return key.user


def api_keys_for(user: Any) -> QuerySet[ApiKey]:
    """The user's own keys, active first, newest first."""
    return ApiKey.objects.filter(user=user).order_by("revoked", "-created_at", "-id")


def api_key_create(*, user: Any, name: str, interface: str) -> tuple[ApiKey, str]:
    """Store a new key for `user` and return it with the raw key, which exists only here: the
    caller shows it once. Raises VALIDATION_ERROR (field `name`) for an empty or too long name
    and CONFLICT when the user already has MAX_ACTIVE_KEYS active keys."""
    name = (name or "").strip()
    if not name:
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            "Give the key a name, e.g. the device or script that will use it.",
            {"field": "name"},
        )
    if len(name) > NAME_MAX_CHARS:
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            f"A key's name is at most {NAME_MAX_CHARS} characters (this one has {len(name)}).",
            {"field": "name", "max_length": NAME_MAX_CHARS},
        )
    with transaction.atomic():
        # The user's row lock makes count-then-insert safe against two tabs at once.
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        active = ApiKey.objects.filter(user=user, revoked=False).count()
        if active >= MAX_ACTIVE_KEYS:
            raise DomainError(
                ErrorCode.CONFLICT,
                f"You already have {active} active API keys, the most allowed: "
                "revoke one you no longer use first.",
                {"active": active, "max_active": MAX_ACTIVE_KEYS},
            )
        raw_key = ApiKey.generate()
        key = ApiKey(user=user, name=name)
        key.set_key(raw_key)
        key.save()
        audit.audit_record(
            action=audit.API_KEY_CREATE,
            interface=interface,
            actor=user,
            target=name,
            details={"api_key_id": key.pk, "prefix": key.prefix},
        )
    return key, raw_key


def api_key_revoke(*, user: Any, key_id: int, interface: str) -> ApiKey:
    """Revoke one of the user's keys; it stops authenticating at once (`user_for_api_key`
    reads `revoked` on every request). Revoking a revoked key changes nothing and records
    nothing. Raises NOT_FOUND for a key that is not the user's, exactly as for a missing one."""
    with transaction.atomic():
        key = api_keys_for(user).select_for_update().filter(pk=key_id).first()
        if key is None:
            raise DomainError(ErrorCode.NOT_FOUND, f"API key {key_id} not found")
        if not key.revoked:
            key.revoked = True
            key.save(update_fields=["revoked"])
            audit.audit_record(
                action=audit.API_KEY_REVOKE,
                interface=interface,
                actor=user,
                target=key.name,
                details={"api_key_id": key.pk, "prefix": key.prefix},
            )
    return key
