"""AgentDesk against a real model: llama.cpp with SmolLM2-135M-Instruct (tests/support/
local_model.py), the small model that ran away, ignored tools and invented tool names in
issue 12. Each test holds the engine to one of the bounds it must keep with such a model."""

import threading
import time

import pytest

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.engine.llm import LLMRequest, ToolSchema, Usage
from agents_app.engine.openai_provider import OpenAICompatibleProvider, forget_endpoint_features
from agents_app.engine.planner import make_plan
from tools_app.process_registry import get_registry

pytestmark = pytest.mark.local_model

OFFERED = ["write_file", "read_file", "list_files", "finish_task"]


class Stop(Exception):
    """What an interrupt raises (a cancel; the engine's StopRun plays this part)."""


class RecordingHooks:
    """The engine's hooks with no database: records the usage it is told about."""

    def __init__(self) -> None:
        self.usage: list[Usage] = []

    def checkpoint(self) -> None:
        pass

    def poll(self) -> None:
        pass

    def on_llm_usage(self, usage: Usage, model: str) -> None:
        self.usage.append(usage)

    def on_token(self, text, *, phase, step_index, reasoning=False) -> None:
        pass


@pytest.fixture
def provider(local_model):
    forget_endpoint_features()
    provider = OpenAICompatibleProvider(
        base_url=local_model.base_url,
        api_key="",
        model=local_model.model,
        temperature=0,
        max_retries=1,
    )
    yield provider
    provider.close()
    forget_endpoint_features()


def specs(names=OFFERED):
    registry = get_registry()
    return [registry.get(name).spec for name in names]


@pytest.mark.slow(reason="SmolLM2 generates up to its token bound on one CPU thread")
def test_a_plan_that_would_run_away_ends_at_its_token_bound_with_its_usage_counted(provider):
    hooks = RecordingHooks()
    started = time.monotonic()

    with pytest.raises(DomainError) as failure:
        make_plan(
            provider=provider,
            hooks=hooks,
            task="Write a long report about every country in the world, one step per country.",
            context={},
            tools=specs(),
            max_steps=50,
            timeout=120,
            max_tokens=12,
        )

    assert failure.value.code == ErrorCode.ANSWER_TOO_LONG
    assert "12-token limit" in failure.value.message
    assert time.monotonic() - started < 60  # bounded by tokens, not by the 120 s timeout
    assert [u.completion_tokens for u in hooks.usage] == [12, 12]
    assert all(u.prompt_tokens > 0 for u in hooks.usage)


def test_an_interrupt_closes_a_real_generation_within_a_second(provider):
    pieces: list[str] = []
    cancel = threading.Event()
    seen_at: list[float] = []

    def on_token(text: str) -> None:
        pieces.append(text)
        if len(pieces) == 5:
            cancel.set()
            seen_at.append(time.monotonic())

    def interrupt() -> None:
        if cancel.is_set():
            raise Stop

    request = LLMRequest(
        messages=[{"role": "user", "content": "Count from 1 to 1000, separated by commas."}],
        max_tokens=3000,
        timeout=120,
        on_token=on_token,
        interrupt=interrupt,
    )
    with pytest.raises(Stop):
        provider.complete(request)

    assert time.monotonic() - seen_at[0] < 1.0
    assert len(pieces) < 20  # the rest of the 1000 numbers was never generated for us


def test_a_server_that_ignores_tools_is_found_out_and_answered_through_prompt_tools(
    provider, local_model
):
    assert local_model.get("/props")["chat_template_caps"]["supports_tools"] is False
    registry = get_registry()
    tools = [
        ToolSchema(name, registry.get(name).spec.description, registry.get(name).spec.input_schema)
        for name in OFFERED
    ]
    request = LLMRequest(
        messages=[
            {"role": "system", "content": "Do the user's task with the tools."},
            {"role": "user", "content": "Task: Write hello to hello.txt"},
        ],
        tools=tools,
        tool_required=True,
        max_tokens=200,
        timeout=120,
    )

    response = provider.complete(request)

    # The server's grammar held the answer to a call of an offered tool with valid arguments.
    (call,) = response.tool_calls
    assert call.name in OFFERED and call.arguments_error is None
    registry.validate_arguments(call.name, call.arguments)


@pytest.mark.parametrize(
    "task",
    [
        "Write hello to hello.txt",
        "Read notes.txt, then write its first line to first.txt",
    ],
)
@pytest.mark.slow(reason="SmolLM2 writes a whole plan on one CPU thread, for each task")
def test_a_plan_from_the_real_model_names_only_offered_tools(provider, task):
    plan = make_plan(
        provider=provider,
        hooks=RecordingHooks(),
        task=task,
        context={},
        tools=specs(),
        max_steps=5,
        timeout=120,
        max_tokens=600,
    )

    assert 1 <= len(plan.steps) <= 5
    for index, step in enumerate(plan.steps):
        assert set(step.tool_names) <= set(OFFERED), step
        assert all(0 <= d < index for d in step.depends_on), step
