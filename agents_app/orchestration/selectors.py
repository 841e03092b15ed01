"""Reads of agent profiles. Profiles are the site's shared configuration, not anyone's own:
everyone signed in reads the same ones, so `user` scopes nothing yet (it is asked for as every
selector asks for it)."""

from typing import Any

from django.db.models import QuerySet

from agents_app.connections.services import connection_ensure_default
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.models import AgentProfile, LLMConnection


def profiles_for(user: Any, *, role: str | None = None) -> QuerySet[AgentProfile]:
    """Every profile by name, or those of one role, with their connections."""
    profiles = AgentProfile.objects.select_related("connection").order_by("name")
    return profiles if role is None else profiles.filter(role=role)


def profile_get(*, user: Any, profile_id: int) -> AgentProfile:
    """The profile, or DomainError NOT_FOUND."""
    profile = profiles_for(user).filter(pk=profile_id).first()
    if profile is None:
        raise DomainError(
            ErrorCode.NOT_FOUND, f"Profile {profile_id} not found", {"profile_id": profile_id}
        )
    return profile


def default_connection() -> LLMConnection | None:
    """The connection a profile without one runs on now (None when no LLM is configured)."""
    return connection_ensure_default()
