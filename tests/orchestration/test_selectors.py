"""Reading profiles: everyone signed in reads every one; a missing one is NOT_FOUND."""

import pytest

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.models import AgentProfile, AgentRole
from agents_app.orchestration.selectors import default_connection, profile_get, profiles_for


@pytest.fixture
def scout(db):
    return AgentProfile.objects.create(
        name="scout", role=AgentRole.RESEARCH, persona="You look around."
    )


def test_everyone_signed_in_reads_the_same_profiles_by_name(owner, outsider, scout):
    names = [p.name for p in profiles_for(owner)]

    assert names == sorted(names) and "scout" in names
    assert names == [p.name for p in profiles_for(outsider)]


def test_profiles_of_one_role_are_only_those(owner, scout, seeded_profiles):
    assert [p.name for p in profiles_for(owner, role=AgentRole.RESEARCH)] == [
        "research_agent",
        "scout",
    ]


def test_a_profile_is_read_by_its_id(outsider, scout):
    assert profile_get(user=outsider, profile_id=scout.pk) == scout


def test_a_missing_profile_is_not_found(owner, scout):
    with pytest.raises(DomainError) as raised:
        profile_get(user=owner, profile_id=scout.pk + 1000)

    assert raised.value.code == ErrorCode.NOT_FOUND
    assert raised.value.details == {"profile_id": scout.pk + 1000}


def test_the_default_connection_follows_the_llm_settings(db, llm_configured):
    assert (default_connection().name, default_connection().model) == ("env", "scripted")


def test_without_an_llm_configured_there_is_no_default_connection(db, settings):
    settings.LLM_BASE_URL = ""
    settings.LLM_MODEL = ""

    assert default_connection() is None
