"""A server that cannot be reached fails a call with tools as CONNECTION_REFUSED, like one
without: the capability probe before it (GET /props) must not turn it into an odd answer."""

import socket

import pytest

from agents_app.engine.llm import LLMError, LLMRequest, ToolSchema
from agents_app.engine.openai_provider import OpenAICompatibleProvider, forget_endpoint_features


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("with_tools", [False, True])
def test_an_unreachable_server_fails_the_call_as_connection_refused(with_tools):
    forget_endpoint_features()
    provider = OpenAICompatibleProvider(
        base_url=f"http://127.0.0.1:{closed_port()}/v1", api_key="", model="m", max_retries=0
    )
    tools = [ToolSchema(name="noop", description="Nothing.", parameters={"type": "object"})]
    request = LLMRequest(
        messages=[{"role": "user", "content": "hi"}], tools=tools if with_tools else []
    )

    with pytest.raises(LLMError) as raised:
        provider.complete(request)

    assert raised.value.code == "CONNECTION_REFUSED"
    assert "cannot reach the LLM server" in raised.value.message
