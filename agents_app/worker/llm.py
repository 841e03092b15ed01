"""The LLM a worker talks to, from Django settings: the one place where the engine's provider
meets configuration (the engine itself reads no settings)."""

from django.conf import settings

from agents_app.core.errors import ErrorCode
from agents_app.engine.llm import LLMError
from agents_app.engine.openai_provider import OpenAICompatibleProvider


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
    return OpenAICompatibleProvider(
        base_url=base_url,
        api_key=getattr(settings, "LLM_API_KEY", "") or "",
        model=model,
        request_timeout=float(getattr(settings, "LLM_REQUEST_TIMEOUT", 120.0)),
        max_retries=int(getattr(settings, "LLM_MAX_RETRIES", 5)),
        retry_base_delay=float(getattr(settings, "LLM_RETRY_BASE_DELAY", 1.0)),
        temperature=getattr(settings, "LLM_TEMPERATURE", None),
    )
