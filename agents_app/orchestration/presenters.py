"""The JSON shape of an agent profile, built once for REST and the pages to come."""

from typing import Any

from agents_app.models import PROFILE_BUDGETS, AgentProfile, LLMConnection


def effective_connection(
    profile: AgentProfile, default: LLMConnection | None
) -> LLMConnection | None:
    """The connection its runs use now: its own, or the default one when it names none."""
    return profile.connection or default


def effective_model(profile: AgentProfile, default: LLMConnection | None) -> str:
    """The model its runs ask for now: its own, or its connection's ("" with no connection)."""
    if profile.model:
        return profile.model
    connection = effective_connection(profile, default)
    return connection.model if connection is not None else ""


def _connection_ref(connection: LLMConnection | None) -> dict[str, Any] | None:
    if connection is None:
        return None
    return {"id": connection.pk, "name": connection.name, "model": connection.model}


def profile_payload(profile: AgentProfile, default: LLMConnection | None) -> dict[str, Any]:
    """A profile as set (`connection` null: the default one; `model` "": the connection's), what
    that comes to now (`effective`: given `default`, the default connection), and its budgets
    per run (null: the RUN_MAX_* / AGENT_RUN_TIMEOUT setting)."""
    return {
        "id": profile.pk,
        "name": profile.name,
        "role": profile.role,
        "persona": profile.persona,
        "connection": _connection_ref(profile.connection),
        "model": profile.model,
        "effective": {
            "connection": _connection_ref(effective_connection(profile, default)),
            "model": effective_model(profile, default),
        },
        "temperature": profile.temperature,
        "specialisations": list(profile.specialisations),
        "allowed_tools": list(profile.allowed_tools),
        "excluded_tools": list(profile.excluded_tools),
        "concurrency_limit": profile.concurrency_limit,
        "budgets": {field: getattr(profile, field) for field in PROFILE_BUDGETS},
        "created_at": profile.created_at.isoformat(),
        "updated_at": profile.updated_at.isoformat(),
    }
