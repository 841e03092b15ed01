"""The real llama.cpp server with SmolLM2 that the real-model tests use
(tests/support/local_model.py) answers through AgentDesk's provider."""

import pytest

from agents_app.engine.llm import LLMRequest
from agents_app.engine.openai_provider import OpenAICompatibleProvider

pytestmark = pytest.mark.local_model


def test_the_local_model_answers_a_chat_completion_with_its_usage(local_model) -> None:
    provider = OpenAICompatibleProvider(
        base_url=local_model.base_url, api_key="", model=local_model.model, max_retries=0
    )
    request = LLMRequest(
        messages=[{"role": "user", "content": "Say hello in one short sentence."}], timeout=60
    )
    try:
        response = provider.complete(request)
    finally:
        provider.close()

    assert response.content.strip(), local_model.log()[-2000:]
    assert response.usage.prompt_tokens > 0
    assert response.usage.completion_tokens > 0
    assert response.model == local_model.model


def test_the_local_model_reports_its_chat_template_capabilities(local_model) -> None:
    props = local_model.get("/props")

    capabilities = props["chat_template_caps"]
    print(f"{local_model.model}: supports_tools={capabilities.get('supports_tools')}")
    assert "supports_tools" in capabilities
    assert props["total_slots"] == 2
