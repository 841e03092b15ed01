"""GET /api/v1/connections, and the `connection` a task is submitted with over REST."""

import json

import pytest

from agents_app.models import ConnectionStatus, LLMConnection, Run, Task
from tests.support.api import assert_error

SECRET = "sk-live-ApiTestKey0123456789abcdefghijkl"


@pytest.fixture
def hosted(db, monkeypatch):
    monkeypatch.setenv("API_TEST_LLM_KEY", SECRET)
    return LLMConnection.objects.create(
        name="hosted",
        base_url="https://api.example/v1",
        model="big-model",
        api_key="${API_TEST_LLM_KEY}",
        context_window=128000,
    )


def submit(client, **fields):
    return client.post(
        "/api/v1/agent/task",
        json.dumps({"task": "Say hello", **fields}),
        content_type="application/json",
    )


def test_the_listing_shows_enabled_connections_default_first_without_the_key(
    staff_api, llm_configured, hosted
):
    LLMConnection.objects.create(
        name="off", base_url="https://x.example/v1", model="m", enabled=False
    )
    LLMConnection.objects.filter(pk=hosted.pk).update(
        status=ConnectionStatus.BROKEN, last_error="cannot reach the LLM server"
    )

    response = staff_api.get("/api/v1/connections")

    assert response.status_code == 200
    body = response.json()
    assert [(c["name"], c["model"], c["default"]) for c in body["connections"]] == [
        ("env", "scripted", True),
        ("hosted", "big-model", False),
    ]
    health = body["connections"][1]["health"]
    assert (health["status"], health["reason"]) == ("broken", "cannot reach the LLM server")
    assert body["connections"][0]["health"]["status"] == "unchecked"
    assert SECRET not in response.content.decode()
    assert "API_TEST_LLM_KEY" not in response.content.decode()


def test_why_a_connection_is_broken_is_for_staff_only(owner_api, staff_api, hosted):
    LLMConnection.objects.filter(pk=hosted.pk).update(
        status=ConnectionStatus.BROKEN, last_error="the server said: quota of team acme used"
    )

    def health(client):
        body = client.get("/api/v1/connections").json()
        [listed] = [c for c in body["connections"] if c["name"] == "hosted"]
        return listed["health"]

    assert health(staff_api)["reason"] == "the server said: quota of team acme used"
    mine = health(owner_api)
    assert mine["status"] == "broken"
    assert "acme" not in mine["reason"] and "staff" in mine["reason"]


def test_the_listing_needs_a_key(client, db):
    assert_error(client.get("/api/v1/connections"), 401, "UNAUTHORIZED")


@pytest.mark.parametrize("by", ["name", "id"])
def test_a_task_submitted_with_a_connection_records_it_on_its_run(
    owner_api, llm_configured, hosted, by
):
    value = hosted.name if by == "name" else hosted.pk

    response = submit(owner_api, connection=value)

    assert response.status_code == 202, response.content
    run = Run.objects.get(pk=response.json()["run_id"])
    assert (run.connection_id, run.llm_model, run.task.connection_id) == (
        hosted.pk,
        "big-model",
        hosted.pk,
    )
    detail = owner_api.get(f"/api/v1/runs/{run.pk}").json()
    assert (detail["connection_id"], detail["model"]) == (hosted.pk, "big-model")


def test_a_task_submitted_without_a_connection_runs_on_the_default(owner_api, llm_configured):
    response = submit(owner_api)

    run = Run.objects.get(pk=response.json()["run_id"])
    assert (run.connection.name, run.llm_model) == ("env", "scripted")


@pytest.mark.parametrize("value", ["nope", 999999, "off"])
def test_an_unknown_or_disabled_connection_is_a_validation_error(
    owner_api, llm_configured, hosted, value
):
    LLMConnection.objects.create(
        name="off", base_url="https://x.example/v1", model="m", enabled=False
    )

    response = submit(owner_api, connection=value)

    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert error["details"]["field"] == "connection"
    assert "GET /api/v1/connections" in error["message"]
    assert sorted(error["details"]["allowed"]) == ["env", "hosted"]
    assert not Task.objects.exists()


@pytest.mark.parametrize("value", [True, 1.5, [1], {"id": 1}, 0])
def test_a_connection_of_the_wrong_type_is_a_validation_error(owner_api, llm_configured, value):
    response = submit(owner_api, connection=value)

    assert_error(response, 400, "VALIDATION_ERROR")
    assert not Task.objects.exists()


def test_with_no_usable_connection_a_task_is_refused_as_not_configured(owner_api, settings):
    settings.LLM_BASE_URL = ""
    settings.LLM_MODEL = "scripted"
    LLMConnection.objects.create(
        name="off", base_url="https://x.example/v1", model="m", enabled=False
    )

    response = submit(owner_api)

    error = assert_error(response, 503, "LLM_NOT_CONFIGURED")
    assert error["details"] == {"missing": ["LLM_BASE_URL"]}


def test_a_staff_default_serves_tasks_without_any_llm_setting(owner_api, settings, hosted):
    settings.LLM_BASE_URL = ""
    settings.LLM_MODEL = ""

    response = submit(owner_api)

    assert response.status_code == 202, response.content
    assert Run.objects.get().connection == hosted
