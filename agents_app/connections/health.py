"""An LLM connection's health: staff's *Check now* (GET <base URL>/models) and what the worker's
real calls found (`connection_mark`). Written with update(), so a check never touches what
staff are editing; the key is never part of what is stored (every reason goes through
core.secrecy), and the reason is for staff only (`connections.presenters`)."""

from dataclasses import dataclass
from typing import Any

import httpx
from django.conf import settings
from django.utils import timezone

from agents_app.core.secrecy import redact, secret_register
from agents_app.models import ConnectionStatus, LLMConnection
from agents_app.models.connections import LAST_ERROR_MAX

CHECK_TIMEOUT = 10.0


def connection_mark(
    connection_id: int,
    *,
    ok: bool,
    reason: str = "",
    capabilities: dict[str, Any] | None = None,
) -> None:
    """Record that the connection works (ok) or not (broken, with `reason`, redacted) as of
    now, and what its endpoint was found to accept when `capabilities` is given."""
    values: dict[str, Any] = {
        "status": ConnectionStatus.OK if ok else ConnectionStatus.BROKEN,
        # Redacted before it is cut, so no secret survives in part at the cut.
        "last_error": "" if ok else redact(reason)[:LAST_ERROR_MAX],
        "last_checked_at": timezone.now(),
    }
    if capabilities is not None:
        values["capabilities"] = capabilities
    LLMConnection.objects.filter(pk=connection_id).update(**values)


def endpoint_of(connection: LLMConnection) -> tuple[str, str, str | None]:
    """(base URL, model, key) a worker would use: the seeded connection's are this process's
    LLM_* settings; a key of None means its ${VAR} is not set. The key, once read, is one of
    the secrets this process redacts from everything (core.secrecy)."""
    if connection.seeded:
        key = getattr(settings, "LLM_API_KEY", "") or ""
        secret_register(key)
        return (settings.LLM_BASE_URL or "").strip(), (settings.LLM_MODEL or "").strip(), key
    key = connection.key_value()
    secret_register(key)
    return connection.base_url.strip(), connection.model.strip(), key


@dataclass(frozen=True)
class CheckOutcome:
    name: str
    ok: bool
    message: str


def connection_check(connection: LLMConnection, *, timeout: float = CHECK_TIMEOUT) -> CheckOutcome:
    """Ask the server for its models (GET <base URL>/models, which every OpenAI-compatible
    server answers without running the model) and record the outcome on the row. `timeout`
    bounds each phase of the request (connect, send, read)."""
    base_url, model, key = endpoint_of(connection)
    outcome = _probe(connection, base_url, model, key, timeout)
    connection_mark(connection.pk, ok=outcome.ok, reason=outcome.message)
    return outcome


def _probe(
    connection: LLMConnection, base_url: str, model: str, key: str | None, timeout: float
) -> CheckOutcome:
    name = connection.name
    if not base_url or not model:
        return CheckOutcome(name, False, "No base URL or model: set LLM_BASE_URL and LLM_MODEL.")
    if key is None:
        return CheckOutcome(
            name,
            False,
            f"The API key refers to ${{{connection.key_variable}}}, but that environment "
            "variable is not set (or empty) where AgentDesk runs.",
        )
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    url = base_url.rstrip("/") + "/models"
    try:
        answer = httpx.get(url, headers=headers, timeout=timeout, follow_redirects=False)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        # InvalidURL is no HTTPError: a malformed base URL is a broken connection, not a crash.
        reason = f"cannot reach the LLM server at {base_url}: {exc.__class__.__name__}: {exc}"
        return CheckOutcome(name, False, redact(reason, [key]))
    if answer.status_code in (401, 403):
        return CheckOutcome(
            name, False, f"the LLM server refused the API key ({answer.status_code})"
        )
    if answer.status_code != 200:
        return CheckOutcome(
            name, False, f"GET {url} answered {answer.status_code}: check the base URL"
        )
    try:
        listed = [str(entry.get("id")) for entry in answer.json().get("data", [])]
    except (ValueError, AttributeError, TypeError):
        listed = []
    if listed and model not in listed:
        shown = ", ".join(listed[:5]) + (" …" if len(listed) > 5 else "")
        return CheckOutcome(name, True, f"Reachable; it lists {shown}, not {model}.")
    return CheckOutcome(name, True, f"Reachable; model {model}.")
