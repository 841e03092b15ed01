"""Every model call the engine makes goes through `ask_model`: its cost is counted against the
run's budget whether the call answered, was cut off or failed."""

from agents_app.engine.hooks import EngineHooks
from agents_app.engine.llm import LLMError, LLMProvider, LLMRequest, LLMResponse


def ask_model(provider: LLMProvider, hooks: EngineHooks, request: LLMRequest) -> LLMResponse:
    """provider.complete(request), its usage recorded through hooks.on_llm_usage (which may
    raise BUDGET_EXCEEDED). A failed call's LLMError is raised after its usage is recorded.
    Each retry of the call is told to hooks.on_llm_retry, when the hooks have it."""
    if request.on_retry is None:
        request.on_retry = getattr(hooks, "on_llm_retry", None)
    try:
        response = provider.complete(request)
    except LLMError as exc:
        if exc.usage.total:
            model = exc.details.get("model", "") if isinstance(exc.details, dict) else ""
            hooks.on_llm_usage(exc.usage, str(model))
        raise
    hooks.on_llm_usage(response.usage, response.model)
    return response
