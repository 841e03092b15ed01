import pytest

from agents_app.engine.openai_provider import forget_endpoint_features
from tests.support.llm_server import ScriptedLLMServer


@pytest.fixture
def server():
    """A scripted OpenAI-compatible server of its own; what the provider learnt of it
    (engine.openai_provider's per-endpoint features) is forgotten afterwards."""
    scripted = ScriptedLLMServer().start()
    yield scripted
    scripted.stop()
    forget_endpoint_features()
