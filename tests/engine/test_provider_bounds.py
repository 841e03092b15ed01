"""The provider's bounds against the scripted LLM server: max_tokens on every request, answers
cut off by it, the cost of failed calls, interrupting a stream, and servers that accept `tools`
but never call one."""

import time

import pytest

from agents_app.core.errors import ErrorCode
from agents_app.engine.llm import LLMError
from agents_app.engine.openai_provider import OpenAICompatibleProvider
from tests.engine.test_openai_provider import ADD, ask

CALL_ADD = {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 5}}]}
NO_TOOLS_PROPS = {"chat_template_caps": {"supports_tools": False, "supports_tool_calls": False}}


@pytest.fixture
def provider(server):
    return OpenAICompatibleProvider(
        base_url=server.base_url, api_key="", model="test-model", sleep=lambda _: None
    )


class Stop(Exception):
    """What an interrupt callback raises (the engine's StopRun plays this part)."""


# --- max_tokens and answers cut off by it ---------------------------------------------------


def test_every_request_carries_the_callers_max_tokens(server, provider):
    server.script([{"match": "", "repeat": True, "replies": [{"content": "hi"}]}])

    provider.complete(ask(max_tokens=123))
    provider.complete(ask())

    assert server.requests[0]["max_tokens"] == 123
    assert "max_tokens" not in server.requests[1]


def test_a_server_that_wants_max_completion_tokens_gets_it_from_then_on(server, provider):
    server.script(
        [
            {
                "match": "",
                "replies": [
                    {"status": 400, "error": "Unsupported parameter: 'max_tokens'"},
                    {"content": "one"},
                    {"content": "two"},
                ],
            }
        ]
    )

    assert provider.complete(ask(max_tokens=50)).content == "one"
    assert provider.complete(ask(max_tokens=60)).content == "two"

    assert [r.get("max_tokens") for r in server.requests] == [50, None, None]
    assert [r.get("max_completion_tokens") for r in server.requests] == [None, 50, 60]


def test_an_answer_cut_off_by_max_tokens_is_returned_as_cut_off_with_its_usage(server, provider):
    reply = {
        "content": '{"steps": [{"objective": "again and again and again',
        "finish_reason": "length",
        "usage": {"prompt_tokens": 40, "completion_tokens": 64},
    }
    server.script([{"match": "", "replies": [reply]}])

    response = provider.complete(ask(max_tokens=64))

    assert response.cut_off
    assert response.finish_reason == "length"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (40, 64)
    assert len(server.requests) == 1  # the caller decides what a cut-off answer is worth


def test_usage_adds_up_every_attempt_a_call_made(server, provider):
    server.script(
        [
            {
                "match": "",
                "replies": [
                    {"content": "half an ans", "truncate": True},
                    {"content": "whole answer", "usage": {"completion_tokens": 5}},
                ],
            }
        ]
    )

    response = provider.complete(ask())

    assert response.content == "whole answer"
    # The cut stream reported no usage: ~4 characters a token of what it sent and wrote.
    assert response.usage.completion_tokens == 5 + 3
    assert response.usage.prompt_tokens > 11


def test_a_failed_call_reports_what_its_attempts_cost(server, provider):
    server.script(
        [{"match": "", "repeat": True, "replies": [{"content": "x" * 400, "truncate": True}]}]
    )
    provider.max_retries = 2

    with pytest.raises(LLMError) as failure:
        provider.complete(ask())

    assert failure.value.code == ErrorCode.INVALID_RESPONSE
    assert failure.value.usage.completion_tokens == 3 * 100


# --- interrupting a stream ------------------------------------------------------------------


def test_an_interrupt_ends_a_long_answer_at_the_next_chunk(server, provider):
    words = [f"word{i} " for i in range(400)]
    server.script([{"match": "", "replies": [{"chunks": words, "chunk_delay": 0.02}]}])
    seen: list[str] = []
    stop_at = time.monotonic() + 0.3

    def interrupt():
        if time.monotonic() >= stop_at:
            raise Stop("cancelled")

    started = time.monotonic()
    with pytest.raises(Stop):
        provider.complete(ask(on_token=seen.append, interrupt=interrupt))

    assert time.monotonic() - started < 1.0  # the whole answer would take 8 s
    assert 0 < len(seen) < 40


# --- servers that ignore tools ---------------------------------------------------------------


def test_a_server_whose_props_say_no_tools_gets_them_in_the_prompt_from_the_first_call(
    server, provider
):
    answer = {"content": '{"tool": "add", "arguments": {"a": 2, "b": 5}}'}
    server.script([{"match": "", "repeat": True, "replies": [answer]}], {"props": NO_TOOLS_PROPS})

    first = provider.complete(ask("Add 2 and 5", tools=[ADD]))
    provider.complete(ask("Add 2 and 5", tools=[ADD]))

    assert [(c.name, c.arguments) for c in first.tool_calls] == [("add", {"a": 2, "b": 5})]
    assert ["tools" in body for body in server.requests] == [False, False]


def test_props_that_allow_tools_or_no_props_change_nothing(server, provider):
    server.script(
        [{"match": "", "repeat": True, "replies": [CALL_ADD]}],
        {"props": {"chat_template_caps": {"supports_tools": True}}},
    )

    response = provider.complete(ask("Add 2 and 5", tools=[ADD]))

    assert response.tool_calls[0].name == "add"
    assert "tools" in server.requests[0]


def test_a_required_call_answered_with_prose_switches_to_prompt_tools(server, provider):
    # A server with no capability report: its answers are all there is to go by.
    server.script(
        [
            {
                "match": "",
                "replies": [
                    {"content": "The sum of 2 and 5 is 7."},
                    {"content": '{"tool": "add", "arguments": {"a": 2, "b": 5}}'},
                    {"content": '{"tool": "add", "arguments": {"a": 1, "b": 1}}'},
                ],
            }
        ],
        {"props": None},
    )

    first = provider.complete(ask("Add 2 and 5", tools=[ADD], tool_required=True))
    second = provider.complete(ask("Add 1 and 1", tools=[ADD], tool_required=True))

    assert first.tool_calls[0].arguments == {"a": 2, "b": 5}
    assert second.tool_calls[0].arguments == {"a": 1, "b": 1}
    assert server.requests[0]["tool_choice"] == "required"
    assert ["tools" in body for body in server.requests] == [True, False, False]
    # A required call leaves no room for a final answer in the grammar.
    schema = server.requests[1]["response_format"]["json_schema"]["schema"]
    assert all("tool" in branch["properties"] for branch in schema["anyOf"])


def test_prose_where_a_call_was_required_is_the_models_choice_on_a_server_that_calls_tools(
    server, provider
):
    server.script([{"match": "", "replies": [{"content": "No need to add anything."}]}])

    response = provider.complete(ask("Hello", tools=[ADD], tool_required=True))

    assert response.content == "No need to add anything."
    assert len(server.requests) == 1 and server.requests[0]["tool_choice"] == "required"


def test_prose_where_no_call_was_required_is_an_answer(server, provider):
    server.script([{"match": "", "replies": [{"content": "Nothing to add."}]}])

    response = provider.complete(ask("Hello", tools=[ADD]))

    assert response.content == "Nothing to add."
    assert "tool_choice" not in server.requests[0]


def test_a_server_that_rejects_tool_choice_keeps_its_native_tools(server, provider):
    server.script(
        [
            {
                "match": "",
                "replies": [
                    {"status": 400, "error": "tool_choice 'required' is not supported"},
                    CALL_ADD,
                ],
            }
        ]
    )

    response = provider.complete(ask("Add 2 and 5", tools=[ADD], tool_required=True))

    assert response.tool_calls[0].name == "add"
    assert ["tool_choice" in body for body in server.requests] == [True, False]
    assert all("tools" in body for body in server.requests)


def test_prompt_tool_schemas_carry_no_descriptions_to_copy(server, provider):
    described = type(ADD)(
        name="finish_task",
        description="Finish the task.",
        parameters={
            "type": "object",
            "properties": {
                "result": {"type": "string", "description": "The final answer."},
                "title": {"type": "string", "title": "A title"},
            },
            "required": ["result"],
        },
    )
    server.script(
        [{"match": "", "replies": [{"content": '{"final": "ok"}'}]}],
        {"props": NO_TOOLS_PROPS},
    )

    provider.complete(ask("Finish", tools=[described]))

    request = server.requests[0]
    branch = request["response_format"]["json_schema"]["schema"]["anyOf"][0]
    assert branch["properties"]["arguments"]["properties"] == {
        "result": {"type": "string"},
        "title": {"type": "string"},
    }
    assert "The final answer." not in request["messages"][0]["content"]
    assert "finish_task(result, title?)" in request["messages"][0]["content"]
