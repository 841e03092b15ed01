"""A run that speaks as someone (a team's agent profile, a micro agent's temporary persona):
every request it makes starts with that persona, before the engine's own instructions."""

from dataclasses import replace
from typing import Any

from agents_app.engine.llm import LLMProvider, LLMRequest, LLMResponse


def with_persona(messages: list[dict[str, Any]], persona: str) -> list[dict[str, Any]]:
    """`messages` with `persona` leading the system message (one is added when none leads)."""
    if not persona.strip():
        return messages
    if messages and messages[0].get("role") == "system":
        first = messages[0]
        return [{**first, "content": f"{persona}\n\n{first.get('content') or ''}"}, *messages[1:]]
    return [{"role": "system", "content": persona}, *messages]


class PersonaProvider:
    """Wraps a provider; each request's system message starts with the persona."""

    def __init__(self, provider: LLMProvider, persona: str) -> None:
        self.provider = provider
        self.persona = persona
        self.model = getattr(provider, "model", "")

    def complete(self, request: LLMRequest) -> LLMResponse:
        return self.provider.complete(
            replace(request, messages=with_persona(request.messages, self.persona))
        )

    def close(self) -> None:
        close = getattr(self.provider, "close", None)
        if close is not None:
            close()
