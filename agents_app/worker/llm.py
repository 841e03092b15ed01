"""The LLM a worker talks to, from Django settings or from the run's LLM connection: the one
place where the engine's provider meets configuration (the engine itself reads no settings)."""

import time

from django.conf import settings

from agents_app.connections.health import endpoint_of
from agents_app.connections.services import connection_ensure_default
from agents_app.core.errors import ErrorCode
from agents_app.core.secrecy import secret_register
from agents_app.engine.llm import LLMError, LLMProvider
from agents_app.engine.openai_provider import OpenAICompatibleProvider
from agents_app.engine.persona import PersonaProvider
from agents_app.models import LLMConnection, ModelPhase, Run
from agents_app.worker.llm_gate import GatedProvider
from agents_app.worker.llm_health import WatchedProvider


def provider_from_settings() -> OpenAICompatibleProvider:
    """The provider configured by Django settings LLM_*. Raises LLMError LLM_NOT_CONFIGURED."""
    base_url = (getattr(settings, "LLM_BASE_URL", "") or "").strip()
    model = (getattr(settings, "LLM_MODEL", "") or "").strip()
    missing = [
        name for name, value in (("LLM_BASE_URL", base_url), ("LLM_MODEL", model)) if not value
    ]
    if missing:
        raise LLMError(
            ErrorCode.LLM_NOT_CONFIGURED,
            f"no LLM is configured: set {' and '.join(missing)} "
            "(for example LLM_BASE_URL=http://127.0.0.1:11434/v1 LLM_MODEL=qwen2.5:7b)",
            {"missing": missing},
        )
    return _provider(base_url, model, getattr(settings, "LLM_API_KEY", "") or "")


def _provider(base_url: str, model: str, api_key: str) -> OpenAICompatibleProvider:
    secret_register(api_key)  # hidden from everything this process stores, logs or shows
    return OpenAICompatibleProvider(
        base_url=base_url,
        api_key=api_key,
        model=model,
        request_timeout=float(getattr(settings, "LLM_REQUEST_TIMEOUT", 120.0)),
        max_retries=int(getattr(settings, "LLM_MAX_RETRIES", 5)),
        retry_base_delay=float(getattr(settings, "LLM_RETRY_BASE_DELAY", 1.0)),
        temperature=getattr(settings, "LLM_TEMPERATURE", None),
    )


def provider_for_connection(connection: LLMConnection) -> OpenAICompatibleProvider:
    """The provider of one connection; the seeded one is this process's LLM_* settings.
    Raises LLMError LLM_NOT_CONFIGURED (disabled, or its key's variable is not set)."""
    if connection.seeded:
        return provider_from_settings()
    if not connection.enabled:
        raise LLMError(
            ErrorCode.LLM_NOT_CONFIGURED,
            f"the LLM connection {connection.name!r} is disabled",
            {"connection": connection.name},
        )
    base_url, model, key = endpoint_of(connection)
    if key is None:
        raise LLMError(
            ErrorCode.LLM_NOT_CONFIGURED,
            f"the LLM connection {connection.name!r} reads its API key from "
            f"${{{connection.key_variable}}}, which is not set where the worker runs",
            {"connection": connection.name, "variable": connection.key_variable},
        )
    return _provider(base_url, model, key)


# When this process last brought the seeded connection's row in line with its settings.
_shown_at = -1e9
SHOW_SETTINGS_EVERY = 60.0


def _settings_shown() -> None:
    """The seeded connection's row shows this process's LLM_* settings (which its requests use
    whatever the row says): checked once a minute, not at every run (two queries each)."""
    global _shown_at
    if time.monotonic() - _shown_at >= SHOW_SETTINGS_EVERY:
        connection_ensure_default()
        _shown_at = time.monotonic()


def provider_for_run(run: Run) -> LLMProvider:
    """The provider of the run's connection (the default for a run without one), watched so
    that its calls keep the connection's health and capabilities current, each request taking
    its turn among the server's in flight (worker.llm_gate); records the model on the run.
    `run` as read with its connection and profile. Raises LLMError LLM_NOT_CONFIGURED."""
    run_id = run.pk
    connection = run.connection or connection_ensure_default()
    if connection is None:
        bare = provider_from_settings()
        return GatedProvider(bare, bare.base_url)
    if connection.seeded:
        _settings_shown()
    provider = provider_for_connection(connection)
    if run.profile is not None:
        # A team's agent: its profile's model on that connection, at its temperature.
        provider.model = run.profile.model or provider.model
        provider.temperature = run.profile.temperature
    updates = {}
    if run.connection_id != connection.pk:
        updates["connection"] = connection
    if run.llm_model != provider.model:
        updates["llm_model"] = provider.model
    if updates:
        Run.objects.filter(pk=run_id).update(**updates)
        for name, value in updates.items():
            setattr(run, name, value)
    # Each request waits its turn among the server's requests in flight (worker.llm_gate).
    return GatedProvider(WatchedProvider(provider, connection), provider.base_url)


def as_itself(run: Run, provider: LLMProvider) -> LLMProvider:
    """The provider speaking as the run's persona (a profile's or a micro agent's), if any."""
    persona = run.task.persona
    return PersonaProvider(provider, persona) if persona and persona.strip() else provider


def phase_providers(run: Run, executing: LLMProvider) -> dict[str, LLMProvider]:
    """Each phase's provider (models.ModelPhase -> provider), `executing` being the run's own
    (provider_for_run, as_itself). A phase whose task names an enabled connection other than
    the run's talks to that connection's server and model, watched and gated as the run's, in
    the run's persona; the others share `executing`. Built when the run's delivery starts, so
    a connection that cannot be used fails the run before it spends a token; every request
    goes through the run's hooks, so the run's budgets count them all. Records the phases'
    models on the run (`phase_models`, when they are not all the run's). Raises LLMError
    LLM_NOT_CONFIGURED."""
    task = run.task
    chosen = {
        ModelPhase.PLANNING: task.planning_connection,
        ModelPhase.VERIFYING: task.verifying_connection,
    }
    providers: dict[str, LLMProvider] = {ModelPhase.EXECUTING: executing}
    models = {ModelPhase.EXECUTING.value: run.llm_model}
    for phase, connection in chosen.items():
        if connection is None or not connection.enabled or connection.pk == run.connection_id:
            providers[phase] = executing
            models[phase.value] = run.llm_model
            continue
        if connection.seeded:
            _settings_shown()
        own = provider_for_connection(connection)
        if run.profile is not None:
            own.temperature = run.profile.temperature  # a team's agent: its profile's
        gated = GatedProvider(WatchedProvider(own, connection), own.base_url)
        providers[phase] = as_itself(run, gated)
        models[phase.value] = own.model
    if all(provider is executing for provider in providers.values()):
        models = {}  # the run's connection for every phase: its model, shown as it always was
    if run.phase_models != models:
        Run.objects.filter(pk=run.pk).update(phase_models=models)
        run.phase_models = models
    return providers
