"""The fast path's pure parts: who takes it, its one-step plan, its prompt and its verdict."""

from dataclasses import dataclass

import pytest

from agents_app.engine.fast import (
    fast_plan,
    fast_plan_raw,
    fast_verdict,
    is_fast_plan,
    split_step_error,
    takes_fast_path,
)
from agents_app.engine.prompts import direct_messages


@dataclass
class StepRow:
    status: str
    output: str = ""
    error: str = ""


@pytest.mark.parametrize(
    ("text", "option", "max_chars", "expected"),
    [
        ("write hello to hello.txt", None, 0, False),  # the default: off
        ("write hello to hello.txt", None, 24, True),  # exactly the limit
        ("write hello to hello.txt!", None, 24, False),  # one character over
        ("  short  ", None, 5, True),  # surrounding blanks do not count
        ("a long task " * 50, True, 0, True),  # the task's option wins over the setting
        ("short", False, 1000, False),
    ],
)
def test_a_task_takes_the_fast_path_by_its_option_else_by_its_length(
    text, option, max_chars, expected
):
    assert takes_fast_path(text=text, option=option, max_chars=max_chars) is expected


def test_the_fast_plan_is_one_step_the_task_itself_with_every_tool():
    plan = fast_plan(task="list the files", tool_names=["list_files", "finish_task"])
    assert [(s.objective, s.tool_names, s.reasoning, s.depends_on) for s in plan.steps] == [
        ("list the files", ["list_files", "finish_task"], "", [])
    ]
    raw = fast_plan_raw(plan)
    assert raw["fast_path"] is True and raw["steps"][0]["objective"] == "list the files"
    assert is_fast_plan(raw)
    assert not is_fast_plan(plan.model_dump()) and not is_fast_plan({}) and not is_fast_plan(None)


def test_the_direct_prompt_is_short_and_marked():
    messages = direct_messages(task="write hello to hello.txt", context={"tone": "calm"})
    system = messages[0]["content"]
    words = len(system.split())
    print(f"direct system prompt: {words} words")
    assert system.splitlines()[0] == "AGENTDESK:DIRECT"
    assert words < 80
    assert "finish_task" in system and "relative" in system
    assert "write hello to hello.txt" in messages[1]["content"]
    assert '"tone": "calm"' in messages[1]["content"]


def test_a_completed_direct_step_is_the_task_complete_with_its_output():
    derived = fast_verdict(StepRow("completed", output="hello.txt written"), can_replan=True)
    assert derived.verdict.task_complete
    assert derived.verdict.response == "hello.txt written"


def test_a_direct_step_that_did_not_finish_asks_for_a_plan_while_replans_remain():
    step = StepRow("failed", error="TOOL_FAILED: write_file: disk full")
    derived = fast_verdict(step, can_replan=True)
    assert not derived.verdict.task_complete and derived.verdict.should_replan
    assert derived.verdict.reasoning == (
        "the direct attempt did not finish: TOOL_FAILED: write_file: disk full"
    )


def test_without_replans_a_direct_step_that_did_not_finish_fails_with_its_own_code():
    step = StepRow("timeout", error="EXECUTION_TIMEOUT: step exceeded 5 s")
    derived = fast_verdict(step, can_replan=False)
    assert not derived.verdict.task_complete and not derived.verdict.should_replan
    assert derived.error_code == "EXECUTION_TIMEOUT"
    assert derived.verdict.reasoning == "step exceeded 5 s"


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            "TOOL_NOT_FOUND: Tool 'x' is not available",
            ("TOOL_NOT_FOUND", "Tool 'x' is not available"),
        ),
        (
            "a step it depends on did not complete",
            ("VERIFICATION_FAILED", "a step it depends on did not complete"),
        ),
        ("NOT_A_CODE: something", ("VERIFICATION_FAILED", "NOT_A_CODE: something")),
        ("", ("VERIFICATION_FAILED", "")),
    ],
)
def test_a_stored_step_error_splits_into_its_code_and_message(error, expected):
    assert split_step_error(error) == expected
