"""Which LLM connection a task runs on, and the default one the LLM_* settings describe."""

from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.inputs import text_problem
from agents_app.core.prepared import Prepared
from agents_app.models import LLMConnection

SEEDED_NAME = "env"
SEEDED_KEY_REFERENCE = "${LLM_API_KEY}"


def llm_missing_settings() -> list[str]:
    """The LLM_* settings the seeded connection lacks to be usable."""
    return [name for name in ("LLM_BASE_URL", "LLM_MODEL") if not getattr(settings, name)]


def _seeded_values() -> dict[str, Any]:
    missing = llm_missing_settings()
    values: dict[str, Any] = {
        "base_url": "" if missing else settings.LLM_BASE_URL.strip(),
        "model": "" if missing else settings.LLM_MODEL.strip(),
        "api_key": SEEDED_KEY_REFERENCE if getattr(settings, "LLM_API_KEY", "") else "",
    }
    if getattr(settings, "LOCAL_MODEL_IN_USE", False):
        values["context_window"] = settings.LOCAL_MODEL_CONTEXT
    return values


def _changes(seeded: LLMConnection, values: dict[str, Any]) -> dict[str, Any]:
    return {field: value for field, value in values.items() if getattr(seeded, field) != value}


def _seeded_sync() -> LLMConnection | None:
    """The seeded row, created or brought in line with the settings; None while the settings
    name no LLM and no row was ever seeded."""
    values = _seeded_values()
    seeded = LLMConnection.objects.filter(seeded=True).first()
    if seeded is None:
        if not values["base_url"]:
            return None
        taken = set(LLMConnection.objects.values_list("name", flat=True))
        name = next(
            candidate
            for candidate in (SEEDED_NAME, *(f"{SEEDED_NAME}-{n}" for n in range(2, 100)))
            if candidate not in taken
        )
        try:
            with transaction.atomic():
                return LLMConnection.objects.create(name=name, seeded=True, **values)
        except IntegrityError:  # another process seeded it at the same moment
            return LLMConnection.objects.filter(seeded=True).first()
    changed = _changes(seeded, values)
    if changed:
        LLMConnection.objects.filter(pk=seeded.pk).update(**changed)
        for field, value in changed.items():
            setattr(seeded, field, value)
    return seeded


# Read at every submission: compiled once (core.prepared).
_DEFAULT = Prepared(
    lambda: LLMConnection.objects.filter(is_default=True, enabled=True)[:1],
    samples=(),
)


def connection_ensure_default() -> LLMConnection | None:
    """Bring the seeded connection in line with the LLM_* settings (so changing them changes
    it) and make sure one enabled connection is the default: the seeded one if usable, else the
    first usable by name. Idempotent; every front end calls it before offering or resolving a
    connection. Returns the default, or None when no connection is enabled."""
    default = _DEFAULT.one()
    if default is not None and default.seeded and not _changes(default, _seeded_values()):
        return default  # the common case, one query: the seeded row is the default, in line
    seeded = _seeded_sync()
    default = _DEFAULT.one()
    if default is not None:
        return default
    candidates = LLMConnection.objects.filter(enabled=True).exclude(base_url="").exclude(model="")
    chosen = seeded if seeded is not None and seeded.usable else candidates.first()
    if chosen is None:
        return None
    try:
        with transaction.atomic():
            LLMConnection.objects.filter(is_default=True).update(is_default=False)
            LLMConnection.objects.filter(pk=chosen.pk).update(is_default=True)
    except IntegrityError:  # another process chose at the same moment: theirs stands
        return _DEFAULT.one()
    chosen.is_default = True
    return chosen


def _not_configured() -> DomainError:
    missing = llm_missing_settings()
    if missing:
        return DomainError(
            ErrorCode.LLM_NOT_CONFIGURED,
            f"No LLM is configured: set {' and '.join(missing)} (see README: Connect an LLM)",
            {"missing": missing},
        )
    return DomainError(
        ErrorCode.LLM_NOT_CONFIGURED,
        "No LLM connection is enabled: staff enable one in the admin (see README: Connect an LLM)",
        {"missing": []},
    )


def connection_for_task(value: Any = None) -> LLMConnection:
    """The enabled connection `value` names (its id, or its name), or the default for None or
    "". Raises DomainError VALIDATION_ERROR (field `connection`) for an unknown or disabled
    one, LLM_NOT_CONFIGURED when the one chosen cannot be used."""
    default = connection_ensure_default()
    connection = default if value is None or value == "" else _enabled_named(value)
    if connection is None or not connection.usable:
        raise _not_configured()
    return connection


def connection_for_phase(value: Any, *, field: str) -> LLMConnection | None:
    """The enabled connection `value` names (its id or name) for one phase of a task's runs
    (models.ModelPhase), or None for None or "" (the phase uses the run's connection). Raises
    DomainError VALIDATION_ERROR naming `field` for an unknown, disabled or unusable one."""
    if value is None or value == "":
        return None
    connection = _enabled_named(value, field=field)
    if not connection.usable:
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            f"The LLM connection {connection.name!r} names no server or model",
            {"field": field},
        )
    return connection


def _enabled_named(value: Any, *, field: str = "connection") -> LLMConnection:
    enabled = LLMConnection.objects.filter(enabled=True)
    found = None
    if isinstance(value, int) and not isinstance(value, bool):
        found = enabled.filter(pk=value).first() if 0 < value < 2**63 else None
    elif isinstance(value, str) and value.strip():
        if problem := text_problem(value):  # refused before a query does, on every database
            raise DomainError(
                ErrorCode.VALIDATION_ERROR, f"The LLM connection {problem}", {"field": field}
            )
        text = value.strip()
        found = enabled.filter(name=text).first()
        if found is None and text.isascii() and text.isdigit() and len(text) < 19:
            found = enabled.filter(pk=int(text)).first()
    if found is None:
        names = sorted(enabled.exclude(base_url="").values_list("name", flat=True))
        shown = value if isinstance(value, str | int) and not isinstance(value, bool) else ""
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            f"Unknown or disabled LLM connection {str(shown)[:60]!r}: use the id or name of an "
            "enabled one (GET /api/v1/connections lists them)",
            {"field": field, "allowed": names},
        )
    return found
