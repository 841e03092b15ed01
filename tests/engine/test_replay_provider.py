"""engine.replay.ReplayProvider on its own (issue 36, item 4): answers in each lane's order,
drift with a diff, a recorded answer calling a tool no longer offered, running out."""

import pytest

from agents_app.engine.exchanges import request_text, text_sha256
from agents_app.engine.hooks import StopRun
from agents_app.engine.llm import Asked, LLMError, LLMRequest, ToolSchema
from agents_app.engine.replay import Divergence, DivergenceKind, RecordedAnswer, ReplayProvider

READ = ToolSchema("read_file", "Reads a file.", {"type": "object"})
WRITE = ToolSchema("write_file", "Writes a file.", {"type": "object"})


def asked(text: str, tools=(READ,), lane=0) -> LLMRequest:
    request = LLMRequest(messages=[{"role": "user", "content": text}], tools=list(tools))
    canonical = request_text(request)
    request.asked = Asked("execution", lane, text_sha256(canonical), canonical)
    return request


def answer_to(request: LLMRequest, **fields) -> RecordedAnswer:
    return RecordedAnswer(
        phase="execution",
        lane=request.asked.lane,
        request_sha256=request.asked.sha256,
        request=request.asked.text,
        **fields,
    )


def read_call() -> list[dict]:
    return [{"id": "c1", "name": "read_file", "arguments": {"path": "a"}, "arguments_error": None}]


def test_each_lane_is_answered_in_its_own_order():
    first, second = asked("step 1", lane=0), asked("step 2", lane=1)
    noted = []
    provider = ReplayProvider(
        [answer_to(first, content="one"), answer_to(second, content="two")], noted.append
    )

    assert provider.complete(asked("step 2", lane=1)).content == "two"
    assert provider.complete(asked("step 1", lane=0)).content == "one"
    assert noted == [] and provider.requests == 2


def test_a_request_that_differs_is_drift_with_its_diff_and_the_answer_is_used():
    noted = []
    provider = ReplayProvider([answer_to(asked("write a poem"), content="a poem")], noted.append)

    answer = provider.complete(asked("write a haiku"))

    assert answer.content == "a poem"
    (drift,) = noted
    assert drift.kind == "request_drift" and drift.step == 1
    assert '-   "content": "write a poem",' in drift.diff.splitlines()
    assert '+   "content": "write a haiku",' in drift.diff.splitlines()


def test_an_answer_calling_a_tool_no_longer_offered_is_a_divergence():
    noted = []
    provider = ReplayProvider([answer_to(asked("read a"), tool_calls=read_call())], noted.append)

    answer = provider.complete(asked("read a", tools=(WRITE,)))

    assert [call.name for call in answer.tool_calls] == ["read_file"]
    kinds = [(d.kind, d.message) for d in noted]
    assert (
        "answer_invalid",
        "step 1: the recorded answer calls read_file, which is not offered any more",
    ) in kinds


def test_an_answer_that_called_a_tool_never_offered_is_replayed_as_it_was():
    noted = []
    source = asked("read a", tools=(WRITE,))
    provider = ReplayProvider([answer_to(source, tool_calls=read_call())], noted.append)

    provider.complete(asked("read a", tools=(WRITE,)))

    assert noted == []


def test_no_answer_left_stops_the_replay_unless_its_source_was_stopped():
    noted = []
    with pytest.raises(StopRun) as stopped:
        ReplayProvider([], noted.append).complete(asked("more"))
    assert stopped.value.code == "REPLAY_DIVERGED"
    assert [d.kind for d in noted] == ["answers_ran_out"]

    with pytest.raises(StopRun) as cancelled:
        ReplayProvider([], noted.append, stopped=True).complete(asked("more"))
    assert cancelled.value.code == "CANCELLED" and len(noted) == 1


def test_the_same_prompt_written_by_two_processes_is_the_same_request(monkeypatch):
    from agents_app.engine import untrusted

    def request():
        text = untrusted.as_data("a result", "read_file", place="call_0")
        return LLMRequest(messages=[{"role": "user", "content": text}], tools=[READ])

    here = request()
    monkeypatch.setattr(untrusted, "_KEY", b"another process's key")
    there = request()

    assert here.messages != there.messages  # each process its own nonces
    assert request_text(here) == request_text(there)
    assert "<untrusted source=" in request_text(here)


def test_a_call_that_failed_in_its_source_fails_again_with_its_code():
    request = asked("step 1")
    provider = ReplayProvider(
        [answer_to(request, error_code="REQUEST_TIMEOUT", error="no answer in 120 s")], [].append
    )

    with pytest.raises(LLMError) as failed:
        provider.complete(asked("step 1"))

    assert (failed.value.code, failed.value.message) == ("REQUEST_TIMEOUT", "no answer in 120 s")


def test_a_divergence_is_anchored_where_the_diff_page_shows_it():
    assert Divergence(DivergenceKind.RESULT_DIFFERS, "x", 2, 1).anchor == "step-2-call-1"
    assert Divergence(DivergenceKind.REQUEST_DRIFT, "x", 3).anchor == "step-3"
    assert Divergence(DivergenceKind.REQUEST_DRIFT, "x").anchor == ""
