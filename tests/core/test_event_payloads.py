"""The payload types of the events (core.event_payloads) and the suite's check of them
(tests/event_payloads.py, which validates every event a test wrote)."""

from agents_app.core.event_payloads import EVENT_PAYLOADS, StepSkippedPayload, ToolResultPayload
from agents_app.core.events import EventType
from tests.event_payloads import payload_problem


def test_every_event_type_has_a_payload_type():
    assert set(EVENT_PAYLOADS) == set(EventType)


def test_a_payload_as_its_emitter_builds_it_passes_the_check():
    skipped = StepSkippedPayload(index=2, reason="a step it depends on did not complete")

    assert payload_problem(EventType.STEP_SKIPPED, skipped) is None


def test_a_payload_missing_a_key_its_type_requires_fails_the_check():
    assert "reason: Field required" in payload_problem(EventType.STEP_SKIPPED, {"index": 2})


def test_a_payload_with_a_key_its_type_does_not_name_fails_the_check():
    problem = payload_problem(EventType.STEP_SKIPPED, {"index": 2, "reason": "", "why": ""})

    assert "why: Extra inputs are not permitted" in problem


def test_a_value_of_another_type_fails_the_check_without_being_converted():
    problem = payload_problem(EventType.STEP_SKIPPED, {"index": "2", "reason": ""})

    assert "index: Input should be a valid integer" in problem


def test_a_nested_payload_refuses_a_key_its_type_does_not_name():
    result = {
        "run_id": 1,
        "task_description": "t",
        "status": "succeeded",
        "success": True,
        "response": "",
        "executed_steps": [],
        "execution_time": None,
        "replans": 0,
        "final_error": None,
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "tool_calls": 0, "cost": 0},
    }

    assert "usage.cost: Extra inputs are not permitted" in payload_problem(EventType.RESULT, result)


def test_a_tool_result_from_outside_is_any_json():
    result = ToolResultPayload(
        tool_call_id=1,
        step_index=0,
        status="succeeded",
        result={"rows": [1, "two", None]},
        error_code="",
        error="",
        duration_ms=3,
    )

    assert payload_problem(EventType.TOOL_RESULT, result) is None
