"""Agent profiles as rows: what a profile may hold, and the four seed 001 brings."""

import pytest
from django.core.exceptions import ValidationError

from agents_app.models import AgentProfile, AgentRole, LLMConnection
from tests.support.profiles import SEEDED, seed_profiles, seeding


def profile(**fields) -> AgentProfile:
    return AgentProfile(
        **{
            "name": "reviewer",
            "role": AgentRole.CUSTOM,
            "persona": "You review pull requests.",
            "temperature": 0.4,
            "specialisations": ["code_review"],
            "allowed_tools": ["read_file", "list_files"],
            "excluded_tools": ["write_file"],
            "concurrency_limit": 3,
            **fields,
        }
    )


def problems(candidate: AgentProfile) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as raised:
        candidate.full_clean()
    return raised.value.message_dict


@pytest.mark.django_db
def test_a_complete_profile_is_valid_and_its_model_override_may_be_blank():
    candidate = profile(model="  ")

    candidate.full_clean()

    assert candidate.model == ""


@pytest.mark.django_db
@pytest.mark.parametrize("temperature", [-0.1, 2.01, 7.0])
def test_a_temperature_outside_0_to_2_is_refused(temperature):
    assert problems(profile(temperature=temperature)) == {
        "temperature": ["The temperature is from 0 to 2."]
    }


@pytest.mark.django_db
@pytest.mark.parametrize("temperature", [0.0, 2.0])
def test_the_temperature_bounds_themselves_are_accepted(temperature):
    profile(temperature=temperature).full_clean()


@pytest.mark.django_db
def test_a_name_taken_in_any_letter_case_is_refused():
    profile(name="Reviewer").save()

    assert problems(profile(name="reviewer")) == {
        "__all__": ["A profile with this name exists already."]
    }


@pytest.mark.django_db
def test_a_tool_both_allowed_and_excluded_is_refused():
    found = problems(profile(allowed_tools=["read_file", "http_get"], excluded_tools=["http_get"]))

    assert found == {
        "excluded_tools": ["Both allowed and excluded: http_get. Pick one for each tool."]
    }


@pytest.mark.django_db
@pytest.mark.parametrize(
    "field, value",
    [
        ("allowed_tools", "read_file"),
        ("allowed_tools", ["read_file", 3]),
        ("excluded_tools", {"name": "write_file"}),
        ("excluded_tools", ["write_file", "write_file"]),
        ("specialisations", ["Code Review"]),
    ],
)
def test_tool_and_specialisation_lists_must_be_lists_of_names(field, value):
    assert list(problems(profile(**{field: value}))) == [field]


@pytest.mark.django_db
def test_a_concurrency_limit_below_one_is_refused():
    assert problems(profile(concurrency_limit=0)) == {
        "concurrency_limit": ["At least one run at a time."]
    }


@pytest.mark.django_db
@pytest.mark.parametrize("budget", ["max_tokens", "max_tool_calls", "max_seconds"])
def test_a_budget_is_positive_or_left_to_the_default(budget):
    profile(**{budget: None}).full_clean()
    profile(**{budget: 1}).full_clean()

    assert list(problems(profile(**{budget: 0}))) == [budget]


@pytest.mark.dialect
@pytest.mark.django_db
def test_the_migration_brings_seed_001s_head_node_and_three_specialists_on_the_default_connection():
    AgentProfile.objects.all().delete()

    seeded = seed_profiles()

    assert [operation.code for operation in seeding.Migration.operations] == [
        seeding.create_profiles
    ]
    assert (
        sorted(seeded)
        == SEEDED
        == ["builder_agent", "head_node", "research_agent", "synthesis_agent"]
    )
    assert {name: p.role for name, p in seeded.items()} == {
        "head_node": "orchestrator",
        "research_agent": "research",
        "builder_agent": "builder",
        "synthesis_agent": "synthesis",
    }
    assert [(p.connection_id, p.model) for p in seeded.values()] == [(None, "")] * 4
    assert seeded["research_agent"].temperature == 0.7
    assert seeded["builder_agent"].temperature == 0.3
    assert seeded["synthesis_agent"].temperature == 0.5
    assert {"exploration", "synthesis", "documentation_analysis"} <= set(
        seeded["research_agent"].specialisations
    )
    assert {"code_generation", "implementation", "testing", "refactoring"} <= set(
        seeded["builder_agent"].specialisations
    )
    assert {"code_review", "security_analysis", "architecture_decisions", "synthesis"} <= set(
        seeded["synthesis_agent"].specialisations
    )
    assert "Central coordinator that analyzes tasks" in seeded["head_node"].persona
    assert "specialized builder agent" in seeded["builder_agent"].persona
    for seeded_profile in seeded.values():
        seeded_profile.full_clean()  # what staff will save from the admin must be valid as is


@pytest.mark.dialect
def test_seeding_again_leaves_profiles_staff_changed_as_they_are(seeded_profiles):
    hosted = LLMConnection.objects.create(
        name="hosted", base_url="https://api.example/v1", model="big-model"
    )
    AgentProfile.objects.filter(name="builder_agent").update(connection=hosted, model="coder-1")
    AgentProfile.objects.filter(name="head_node").delete()

    seed_profiles()

    builder = AgentProfile.objects.get(name="builder_agent")
    assert (builder.connection_id, builder.model) == (hosted.pk, "coder-1")
    assert AgentProfile.objects.filter(name__in=SEEDED).count() == 4
