"""A head node's split that is no split (issue 32, finding 8), judged on its structure."""

import pytest

from agents_app.engine.decomposition_check import decomposition_problem, is_placeholder
from agents_app.engine.team import Decomposition


def split(*descriptions: str, persona: str = "") -> Decomposition:
    micro = {"micro": {"persona": persona}} if persona else {}
    return Decomposition.model_validate(
        {"subtasks": [{"description": d, **micro} for d in descriptions]}
    )


@pytest.mark.parametrize(
    "text", ["string", "A task", "Subtask 1", "task 2: description", "TODO", "...", "<text>"]
)
def test_a_subtask_that_names_no_work_is_a_placeholder(text):
    assert is_placeholder(text)


@pytest.mark.parametrize(
    "text", ["Research CSV libraries", "Test it", "Review", "Écrire reader.py", "要約する"]
)
def test_a_subtask_that_names_work_in_any_language_is_none(text):
    assert not is_placeholder(text)


def test_a_real_split_has_no_problem():
    assert decomposition_problem(split("Research CSV libraries", "Write reader.py")) is None


def test_the_same_subtask_twice_is_a_problem_whatever_its_case_and_spacing():
    assert decomposition_problem(split("Research CSV", "research  csv.", "Write it")) == (
        '2 subtasks are the same ("Research CSV")'
    )


def test_placeholders_are_counted_and_quoted_once():
    assert decomposition_problem(split("A task", "A task", "Write reader.py")) == (
        '2 of its 3 subtasks say nothing of the work ("A task" 2 times)'
    )


def test_a_micro_agent_with_a_placeholder_persona_is_a_problem():
    assert decomposition_problem(split("Check the list", persona="string")) == (
        'a micro agent\'s persona says nothing of who it is ("string")'
    )
