"""GET /api/v1/profiles and /api/v1/profiles/{id}: shared configuration anyone signed in reads."""

import pytest

from agents_app.models import AgentProfile, AgentRole, LLMConnection
from tests.support.api import assert_error


@pytest.fixture
def hosted(db):
    return LLMConnection.objects.create(
        name="hosted", base_url="https://api.example/v1", model="big-model"
    )


@pytest.fixture
def reviewer(db, hosted):
    return AgentProfile.objects.create(
        name="reviewer",
        role=AgentRole.CUSTOM,
        persona="You review pull requests.",
        connection=hosted,
        temperature=0.4,
        specialisations=["code_review"],
        excluded_tools=["write_file"],
        max_seconds=600,
    )


def test_the_listing_shows_every_profile_with_the_connection_and_model_it_comes_to(
    outsider_api, llm_configured, reviewer, seeded_profiles
):
    response = outsider_api.get("/api/v1/profiles")

    assert response.status_code == 200
    profiles = {p["name"]: p for p in response.json()["profiles"]}
    assert sorted(profiles) == [
        "builder_agent",
        "head_node",
        "research_agent",
        "reviewer",
        "synthesis_agent",
    ]
    builder = profiles["builder_agent"]
    assert (builder["role"], builder["connection"], builder["model"]) == ("builder", None, "")
    assert (builder["effective"]["connection"]["name"], builder["effective"]["model"]) == (
        "env",
        "scripted",
    )
    mine = profiles["reviewer"]
    assert (mine["effective"]["connection"]["name"], mine["effective"]["model"]) == (
        "hosted",
        "big-model",
    )
    assert mine["excluded_tools"] == ["write_file"]
    assert mine["budgets"] == {"max_tokens": None, "max_tool_calls": None, "max_seconds": 600}


def test_the_listing_narrows_to_one_role(owner_api, reviewer, seeded_profiles):
    response = owner_api.get("/api/v1/profiles", {"role": "custom"})

    assert [p["name"] for p in response.json()["profiles"]] == ["reviewer"]


def test_an_unknown_role_is_a_validation_error(owner_api, db):
    error = assert_error(owner_api.get("/api/v1/profiles?role=boss"), 400, "VALIDATION_ERROR")

    assert error["details"]["errors"][0]["field"] == "role"


def test_a_profile_is_read_by_its_id(owner_api, reviewer, hosted):
    response = owner_api.get(f"/api/v1/profiles/{reviewer.pk}")

    assert response.status_code == 200
    body = response.json()
    assert (body["id"], body["name"], body["persona"]) == (
        reviewer.pk,
        "reviewer",
        "You review pull requests.",
    )
    assert body["connection"] == {"id": hosted.pk, "name": "hosted", "model": "big-model"}


def test_a_missing_profile_is_a_404_in_the_envelope(owner_api, reviewer):
    error = assert_error(owner_api.get(f"/api/v1/profiles/{reviewer.pk + 1000}"), 404, "NOT_FOUND")

    assert error["details"] == {"profile_id": reviewer.pk + 1000}


@pytest.mark.parametrize("path", ["/api/v1/profiles", "/api/v1/profiles/1"])
def test_profiles_need_a_key_or_a_session(anonymous_client, path):
    assert_error(anonymous_client.get(path), 401, "UNAUTHORIZED")
