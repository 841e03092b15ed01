"""A profile's JSON shape: as set, and what it comes to now."""

import pytest

from agents_app.models import AgentProfile, AgentRole, LLMConnection
from agents_app.orchestration.presenters import profile_payload


@pytest.fixture
def default(db):
    return LLMConnection.objects.create(
        name="local", base_url="http://127.0.0.1:9/v1", model="small-model", is_default=True
    )


@pytest.fixture
def hosted(db):
    return LLMConnection.objects.create(
        name="hosted", base_url="https://api.example/v1", model="big-model"
    )


def make(**fields) -> AgentProfile:
    return AgentProfile.objects.create(
        name="scout", role=AgentRole.RESEARCH, persona="You look around.", **fields
    )


def test_a_profile_without_connection_or_model_comes_to_the_default_connections_model(default):
    payload = profile_payload(make(), default)

    assert (payload["connection"], payload["model"]) == (None, "")
    assert payload["effective"] == {
        "connection": {"id": default.pk, "name": "local", "model": "small-model"},
        "model": "small-model",
    }


def test_a_profile_on_its_own_connection_with_its_own_model_comes_to_those(default, hosted):
    payload = profile_payload(make(connection=hosted, model="big-model-mini"), default)

    assert payload["connection"] == {"id": hosted.pk, "name": "hosted", "model": "big-model"}
    assert payload["effective"] == {
        "connection": {"id": hosted.pk, "name": "hosted", "model": "big-model"},
        "model": "big-model-mini",
    }


def test_without_any_connection_a_profile_comes_to_none(db):
    payload = profile_payload(make(), None)

    assert payload["effective"] == {"connection": None, "model": ""}


def test_the_payload_carries_the_profile_whole(default):
    scout = make(
        temperature=0.25,
        specialisations=["exploration"],
        allowed_tools=["read_file"],
        excluded_tools=["http_get"],
        concurrency_limit=4,
        max_tokens=5000,
    )

    payload = profile_payload(scout, default)

    assert {k: v for k, v in payload.items() if k not in ("effective", "connection")} == {
        "id": scout.pk,
        "name": "scout",
        "role": "research",
        "persona": "You look around.",
        "model": "",
        "temperature": 0.25,
        "specialisations": ["exploration"],
        "allowed_tools": ["read_file"],
        "excluded_tools": ["http_get"],
        "concurrency_limit": 4,
        "budgets": {"max_tokens": 5000, "max_tool_calls": None, "max_seconds": None},
        "created_at": scout.created_at.isoformat(),
        "updated_at": scout.updated_at.isoformat(),
    }
