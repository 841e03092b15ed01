"""OpenAICompatibleProvider against the scripted LLM server: real HTTP, real SDK, no mocks."""

import socket
import time

import pytest

from agents_app.core.secrecy import redact
from agents_app.engine import openai_provider
from agents_app.engine.llm import LLMError, LLMRequest, ToolSchema
from agents_app.engine.openai_provider import (
    OpenAICompatibleProvider,
)
from agents_app.worker.llm import provider_from_settings

ADD = ToolSchema(
    name="add",
    description="Add two numbers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    },
)
VERDICT_SCHEMA = {
    "type": "object",
    "properties": {"task_complete": {"type": "boolean"}, "reasoning": {"type": "string"}},
    "required": ["task_complete", "reasoning"],
}
VERDICT = '{"task_complete": true, "reasoning": "all steps done"}'


@pytest.fixture
def sleeps():
    return []


@pytest.fixture
def provider(server, sleeps):
    """A provider whose backoff sleeps are recorded, not slept."""
    return OpenAICompatibleProvider(
        base_url=server.base_url, api_key="", model="test-model", sleep=sleeps.append
    )


def ask(text="Say hello", **fields):
    return LLMRequest(messages=[{"role": "user", "content": text}], **fields)


# --- streaming, tool calls, reasoning ------------------------------------------------------


def test_it_streams_content_and_passes_each_piece_to_on_token(server, provider):
    server.script([{"match": "hello", "replies": [{"content": "Hello there, nice to meet you."}]}])
    pieces = []

    response = provider.complete(ask(on_token=pieces.append))

    assert response.content == "Hello there, nice to meet you."
    assert len(pieces) > 1
    assert "".join(pieces) == response.content
    assert response.model == "scripted"
    body = server.requests[0]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["model"] == "test-model"


def test_it_keeps_answering_when_on_token_fails(server, provider):
    server.script([{"match": "", "replies": [{"content": "Hello there, nice to meet you."}]}])

    def broken_listener(piece):
        raise RuntimeError("the socket went away")

    assert provider.complete(ask(on_token=broken_listener)).content.startswith("Hello")


def test_it_returns_the_tool_calls_the_model_asked_for(server, provider):
    server.script(
        [
            {
                "match": "sum",
                "replies": [
                    {
                        "tool_calls": [
                            {"name": "add", "arguments": {"a": 1, "b": 2}, "id": "call_1"},
                            {"name": "add", "arguments": {"a": 3, "b": 4}},
                        ]
                    }
                ],
            }
        ]
    )

    response = provider.complete(ask("What is the sum?", tools=[ADD]))

    assert response.content == ""
    assert [(c.name, c.arguments, c.arguments_error) for c in response.tool_calls] == [
        ("add", {"a": 1, "b": 2}, None),
        ("add", {"a": 3, "b": 4}, None),
    ]
    assert response.tool_calls[0].id == "call_1"
    assert response.tool_calls[1].id
    assert server.requests[0]["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add two numbers.",
                "parameters": ADD.parameters,
            },
        }
    ]


@pytest.mark.parametrize("raw", ['{"a": 1, "b":', "[1, 2]"])
def test_it_reports_malformed_tool_arguments_instead_of_failing(server, provider, raw):
    server.script([{"match": "", "replies": [{"tool_calls": [{"name": "add", "arguments": raw}]}]}])

    (call,) = provider.complete(ask(tools=[ADD])).tool_calls

    assert call.name == "add"
    assert call.arguments == {}
    assert call.arguments_error


def test_it_collects_reasoning_content_as_reasoning(server, provider):
    server.script(
        [{"match": "", "replies": [{"reasoning": "The user greets me.", "content": "Hi!"}]}]
    )

    response = provider.complete(ask())

    assert response.reasoning == "The user greets me."
    assert response.content == "Hi!"


@pytest.mark.parametrize("tag", ["think", "thinking"])
def test_it_moves_a_leading_think_block_into_reasoning(server, provider, tag):
    # The tags are split across chunks, as a tokenizer would split them.
    chunks = [
        f"<{tag[:3]}",
        f"{tag[3:]}>I should",
        f" greet.</{tag[:2]}",
        f"{tag[2:]}>\n\nHel",
        "lo!",
    ]
    server.script([{"match": "", "replies": [{"chunks": chunks}]}])
    pieces = []

    response = provider.complete(ask(on_token=pieces.append))

    assert response.reasoning == "I should greet."
    assert response.content == "Hello!"
    assert "".join(pieces) == "Hello!"


def test_it_reads_reasoning_before_a_lone_closing_think_tag(server, provider):
    # Some chat templates open the think block in the prompt, so only the closing tag arrives.
    server.script([{"match": "", "replies": [{"content": "Greeting needed.</think>\nHello!"}]}])

    response = provider.complete(ask())

    assert response.reasoning == "Greeting needed."
    assert response.content == "Hello!"


def test_it_passes_the_server_usage_through(server, provider):
    server.script(
        [
            {
                "match": "",
                "replies": [
                    {"content": "ok", "usage": {"prompt_tokens": 123, "completion_tokens": 45}}
                ],
            }
        ]
    )

    usage = provider.complete(ask()).usage

    assert (usage.prompt_tokens, usage.completion_tokens, usage.total) == (123, 45, 168)


def test_it_estimates_usage_when_the_server_rejects_stream_options(server, provider):
    server.script(
        [{"match": "", "repeat": True, "replies": [{"content": "x" * 400}]}],
        {"reject_stream_options": True},
    )

    first = provider.complete(ask())
    provider.complete(ask())

    assert first.content == "x" * 400
    assert first.usage.completion_tokens == 100
    assert first.usage.prompt_tokens > 0
    assert ["stream_options" in body for body in server.requests] == [True, False, False]


# --- structured output -----------------------------------------------------------------------


def test_it_asks_for_a_json_schema_and_parses_the_answer(server, provider):
    server.script([{"match": "", "replies": [{"content": VERDICT}]}])

    response = provider.complete(
        ask(response_schema=VERDICT_SCHEMA, response_schema_name="verdict")
    )

    assert response.parsed == {"task_complete": True, "reasoning": "all steps done"}
    assert server.requests[0]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "verdict", "schema": VERDICT_SCHEMA, "strict": False},
    }


def test_it_falls_back_to_json_object_when_json_schema_is_rejected(server, provider):
    server.script(
        [{"match": "", "repeat": True, "replies": [{"content": VERDICT}]}],
        {"reject_json_schema": True},
    )

    first = provider.complete(ask(response_schema=VERDICT_SCHEMA))
    second = provider.complete(ask(response_schema=VERDICT_SCHEMA))

    assert first.parsed == second.parsed == {"task_complete": True, "reasoning": "all steps done"}
    formats = [body["response_format"]["type"] for body in server.requests]
    # The second call goes straight to what worked.
    assert formats == ["json_schema", "json_object", "json_object"]
    assert '"task_complete"' in server.requests[1]["messages"][0]["content"]


def test_it_falls_back_to_instructions_in_the_prompt_when_response_format_is_rejected(
    server, provider
):
    fenced = f"Here you go:\n```json\n{VERDICT}\n```"
    server.script(
        [{"match": "", "repeat": True, "replies": [{"content": fenced}]}],
        {"reject_response_format": True},
    )

    first = provider.complete(ask(response_schema=VERDICT_SCHEMA))
    second = provider.complete(ask(response_schema=VERDICT_SCHEMA))

    assert first.parsed == second.parsed == {"task_complete": True, "reasoning": "all steps done"}
    formats = [(body.get("response_format") or {}).get("type") for body in server.requests]
    assert formats == ["json_schema", "json_object", None, None]
    system = server.requests[-1]["messages"][0]
    assert system["role"] == "system"
    assert "JSON schema" in system["content"]
    assert '"task_complete"' in system["content"]


def test_it_leaves_parsed_empty_when_the_answer_is_not_json(server, provider):
    server.script([{"match": "", "replies": [{"content": "I think the task is complete."}]}])

    response = provider.complete(ask(response_schema=VERDICT_SCHEMA))

    assert response.parsed is None
    assert response.content == "I think the task is complete."


# --- servers without tools ------------------------------------------------------------------


def test_it_describes_tools_in_the_prompt_when_the_server_rejects_them(server, provider):
    call = '{"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 5}}]}'
    server.script(
        [{"match": "", "repeat": True, "replies": [{"content": call}]}], {"reject_tools": True}
    )
    pieces = []

    first = provider.complete(ask("Add 2 and 5", tools=[ADD], on_token=pieces.append))
    second = provider.complete(ask("Add 2 and 5", tools=[ADD]))

    for response in (first, second):
        assert response.content == ""
        assert [(c.name, c.arguments) for c in response.tool_calls] == [("add", {"a": 2, "b": 5})]
        assert response.tool_calls[0].id
    assert pieces == []  # the JSON is not shown to the user as if it were an answer
    assert ["tools" in body for body in server.requests] == [True, False, False]
    system = server.requests[-1]["messages"][0]
    assert system["role"] == "system"
    assert "- add(a, b): Add two numbers." in system["content"]
    # The server's grammar keeps the answer to a call of `add` or a final answer.
    schema = server.requests[-1]["response_format"]["json_schema"]["schema"]
    assert [branch["properties"].get("tool") for branch in schema["anyOf"]] == [
        {"const": "add"},
        None,
    ]
    assert schema["anyOf"][1]["required"] == ["final"]


def test_it_reads_a_final_answer_from_the_tool_fallback(server, provider):
    server.script(
        [{"match": "", "replies": [{"content": 'Sure.\n{"final": "The sum is 7."}'}]}],
        {"reject_tools": True},
    )
    pieces = []

    response = provider.complete(ask(tools=[ADD], on_token=pieces.append))

    assert response.content == "The sum is 7."
    assert response.tool_calls == []
    assert pieces == ["The sum is 7."]


def test_it_sends_earlier_tool_calls_as_text_to_a_server_without_tools(server, provider):
    server.script(
        [{"match": "", "replies": [{"content": '{"final": "7"}'}]}], {"reject_tools": True}
    )
    messages = [
        {"role": "system", "content": "You add numbers."},
        {"role": "user", "content": "Add 2 and 5"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 2, "b": 5}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "7"},
    ]

    assert provider.complete(LLMRequest(messages=messages, tools=[ADD])).content == "7"

    sent = server.requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert '"name": "add"' in sent[2]["content"]
    assert sent[3]["content"] == "Result of add:\n7"


def test_it_guesses_tools_are_the_problem_when_a_400_names_nothing(server, provider):
    call = '{"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 1}}]}'
    server.script(
        [{"match": "", "repeat": True, "replies": [{"content": call}]}],
        {"reject_tools": True, "vague_errors": True},
    )

    provider.complete(ask(tools=[ADD]))
    response = provider.complete(ask(tools=[ADD]))

    assert response.tool_calls[0].arguments == {"a": 1, "b": 1}
    sent = [("tools" in body, "stream_options" in body) for body in server.requests]
    # First without stream_options (the cheapest loss), then without tools only; remembered.
    assert sent == [(True, True), (True, False), (False, True), (False, True)]


# --- failures and retries -------------------------------------------------------------------


def test_it_retries_rate_limits_and_then_succeeds(server):
    server.script(
        [{"match": "", "replies": [{"status": 429}, {"status": 429}, {"content": "finally"}]}]
    )
    provider = OpenAICompatibleProvider(
        base_url=server.base_url, api_key="", model="m", retry_base_delay=0.01
    )

    assert provider.complete(ask()).content == "finally"
    assert len(server.requests) == 3


def test_it_doubles_the_delay_between_retries(server, provider, sleeps):
    server.script([{"match": "", "replies": [{"status": 500}, {"status": 429}, {"content": "ok"}]}])
    provider.retry_base_delay = 0.5

    assert provider.complete(ask()).content == "ok"
    assert sleeps == [0.5, 1.0]


def test_it_honours_retry_after_but_caps_it(server, provider, sleeps):
    server.script(
        [
            {
                "match": "",
                "replies": [
                    {"status": 429, "retry_after": 3},
                    {"status": 429, "retry_after": 86400},
                    {"content": "ok"},
                ],
            }
        ]
    )

    assert provider.complete(ask(timeout=300)).content == "ok"
    assert sleeps == [3.0, 60.0]


def test_each_retry_is_told_with_its_reason_wait_and_attempt_number(server, provider, sleeps):
    server.script(
        [
            {
                "match": "",
                "replies": [
                    {"status": 429, "error": "slow down"},
                    {"status": 503},
                    {"content": "ok"},
                ],
            }
        ]
    )
    provider.retry_base_delay = 2
    told = []

    assert provider.complete(ask(on_retry=told.append)).content == "ok"

    assert [(n.code, n.delay, n.attempt, n.attempts) for n in told] == [
        ("RATE_LIMITED", 2, 2, 6),
        ("MAX_RETRIES_EXCEEDED", 4, 3, 6),
    ]
    # The server's own words stay out of the run's notices (staff read them on the connection).
    assert (told[0].reason, told[1].reason) == (
        "the LLM server is rate limiting us",
        "the LLM server keeps failing (503)",
    )


def test_a_cancel_ends_the_wait_between_retries(server, provider):
    server.script([{"match": "", "repeat": True, "replies": [{"status": 429, "retry_after": 30}]}])
    checks = []

    def interrupt():
        checks.append(time.monotonic())
        if len(checks) > 2:
            raise Cancelled

    class Cancelled(Exception):
        pass

    provider._sleep = time.sleep
    started = time.monotonic()
    with pytest.raises(Cancelled):
        provider.complete(ask(timeout=300, interrupt=interrupt))
    assert time.monotonic() - started < 5


def test_it_gives_up_with_rate_limited_after_five_retries(server, provider, sleeps):
    server.script(
        [{"match": "", "repeat": True, "replies": [{"status": 429, "error": "slow down"}]}]
    )

    with pytest.raises(LLMError) as raised:
        provider.complete(ask())

    assert raised.value.code == "RATE_LIMITED"
    assert "slow down" in raised.value.server_text
    assert len(server.requests) == 6
    assert len(sleeps) == 5


def test_it_stops_retrying_at_the_providers_max_retries(server, sleeps):
    server.script([{"match": "", "repeat": True, "replies": [{"status": 429}]}])
    provider = OpenAICompatibleProvider(
        base_url=server.base_url, api_key="", model="m", max_retries=1, sleep=sleeps.append
    )

    with pytest.raises(LLMError) as raised:
        provider.complete(ask())

    assert raised.value.code == "RATE_LIMITED"
    assert len(server.requests) == 2


def test_it_reports_connection_refused_for_a_closed_port(sleeps):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = OpenAICompatibleProvider(
        base_url=f"http://127.0.0.1:{port}/v1", api_key="", model="m", sleep=sleeps.append
    )

    with pytest.raises(LLMError) as raised:
        provider.complete(ask())

    assert raised.value.code == "CONNECTION_REFUSED"
    assert f"127.0.0.1:{port}" in raised.value.message
    assert len(sleeps) == 3


def test_it_times_out_within_the_request_timeout(server, provider):
    server.script([{"match": "", "repeat": True, "replies": [{"delay": 3, "content": "too late"}]}])

    started = time.monotonic()
    with pytest.raises(LLMError) as raised:
        provider.complete(ask(timeout=0.5))

    assert raised.value.code == "REQUEST_TIMEOUT"
    assert time.monotonic() - started < 1.5


def test_it_times_out_when_a_stream_trickles_past_the_deadline(server, provider):
    server.script([{"match": "", "replies": [{"content": "a b c d e f g h", "chunk_delay": 0.2}]}])

    started = time.monotonic()
    with pytest.raises(LLMError) as raised:
        provider.complete(ask(timeout=0.5))

    assert raised.value.code == "REQUEST_TIMEOUT"
    assert time.monotonic() - started < 1.5


def test_it_raises_invalid_response_after_empty_answers(server, provider, sleeps):
    server.script([{"match": "", "repeat": True, "replies": [{"content": ""}]}])

    with pytest.raises(LLMError) as raised:
        provider.complete(ask())

    assert raised.value.code == "INVALID_RESPONSE"
    assert "empty" in raised.value.message
    assert len(server.requests) == 6


def test_it_asks_again_after_one_empty_answer(server, provider):
    server.script([{"match": "", "replies": [{"content": "  "}, {"content": "Now with words."}]}])

    assert provider.complete(ask()).content == "Now with words."


@pytest.mark.parametrize("broken", [{"truncate": True}, {"garbled": True}])
def test_it_reports_a_broken_stream_as_invalid_response(server, provider, broken):
    server.script(
        [{"match": "", "repeat": True, "replies": [{"content": "Half an answer", **broken}]}]
    )

    with pytest.raises(LLMError) as raised:
        provider.complete(ask())

    assert raised.value.code == "INVALID_RESPONSE"


def test_it_retries_server_errors_and_then_succeeds(server, provider, sleeps):
    server.script([{"match": "", "replies": [{"status": 503}, {"drop": True}, {"content": "ok"}]}])

    assert provider.complete(ask()).content == "ok"
    assert len(sleeps) == 2


def test_it_does_not_retry_a_refused_api_key(server, provider):
    server.script([{"match": "", "repeat": True, "replies": [{"status": 401, "error": "bad key"}]}])

    with pytest.raises(LLMError) as raised:
        provider.complete(ask())

    assert raised.value.code == "INVALID_RESPONSE"
    assert raised.value.message == "the LLM server refused the API key"
    assert len(server.requests) == 1


def test_it_keeps_the_servers_message_apart_from_its_own(server, provider):
    server.script([{"match": "something else", "replies": [{"content": "no"}]}])

    with pytest.raises(LLMError) as raised:
        provider.complete(ask("Unexpected question"))

    assert raised.value.code == "MAX_RETRIES_EXCEEDED"
    # The server's words are staff's to read (the connection's health), not the run's.
    assert "no scripted reply" in raised.value.server_text
    assert "Unexpected question" in raised.value.server_text
    assert raised.value.message.startswith("the LLM server keeps failing (500)")
    assert "no scripted reply" not in raised.value.message


# --- settings ---------------------------------------------------------------------------------


def test_it_refuses_to_build_a_provider_without_base_url_and_model(settings):
    settings.LLM_BASE_URL = ""
    settings.LLM_MODEL = ""

    with pytest.raises(LLMError) as raised:
        provider_from_settings()

    assert raised.value.code == "LLM_NOT_CONFIGURED"
    assert "LLM_BASE_URL" in raised.value.message
    assert "LLM_MODEL" in raised.value.message


def test_the_key_a_provider_is_built_with_is_redacted_from_then_on(settings, server):
    # Set in settings (e.g. from .env), not in this process's environment.
    key = "settings-only-Key0123456789abcdefXYZ"
    settings.LLM_BASE_URL, settings.LLM_MODEL, settings.LLM_API_KEY = server.base_url, "m", key

    provider_from_settings()

    assert redact(f"Received API Key = Bearer {key}") == "Received API Key = Bearer [redacted]"


def test_it_builds_a_provider_from_settings(settings, server):
    settings.LLM_BASE_URL = server.base_url
    settings.LLM_MODEL = "local-model"
    settings.LLM_API_KEY = ""
    settings.LLM_MAX_RETRIES = 2
    server.script([{"match": "", "replies": [{"content": "configured"}]}])

    provider = provider_from_settings()

    assert provider.max_retries == 2
    assert provider.complete(ask()).content == "configured"
    assert server.requests[0]["model"] == "local-model"


def test_it_refuses_a_base_url_without_a_scheme():
    with pytest.raises(LLMError) as raised:
        OpenAICompatibleProvider(base_url="localhost:8000/v1", api_key="", model="m")

    assert raised.value.code == "LLM_NOT_CONFIGURED"


# --- one client a server in a process -----------------------------------------------------


def test_providers_of_one_server_and_key_share_the_process_client(server):
    """A worker makes a provider for every run: they share one client (its connections)."""
    server.script([{"match": "hello", "replies": [{"content": "Hi."}, {"content": "Hi again."}]}])
    first = OpenAICompatibleProvider(base_url=server.base_url, api_key="", model="a")
    second = OpenAICompatibleProvider(base_url=server.base_url + "/", api_key="", model="b")
    other_key = OpenAICompatibleProvider(base_url=server.base_url, api_key="k2", model="a")

    assert first._client is second._client
    assert other_key._client is not first._client
    assert first.complete(ask()).content == "Hi."
    assert second.complete(ask()).content == "Hi again."


def test_a_closed_providers_client_is_not_handed_out_again(server):
    server.script([{"match": "hello", "replies": [{"content": "Still here."}]}])
    first = OpenAICompatibleProvider(base_url=server.base_url, api_key="", model="a")
    first.close()
    after = OpenAICompatibleProvider(base_url=server.base_url, api_key="", model="a")

    assert after._client is not first._client
    assert after.complete(ask()).content == "Still here."


def test_a_forked_process_makes_its_own_client(server, monkeypatch):
    parents = OpenAICompatibleProvider(base_url=server.base_url, api_key="", model="a")
    monkeypatch.setattr(openai_provider.os, "getpid", lambda: -1)
    childs = OpenAICompatibleProvider(base_url=server.base_url, api_key="", model="a")

    assert childs._client is not parents._client
