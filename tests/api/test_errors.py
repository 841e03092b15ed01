"""Every failure under /api/ answers with seed 000's error envelope, never an HTML page."""

import json

import pytest

from agents_app.models import Task
from tests.support.api import assert_error, submit

TASK = "/api/v1/agent/task"


@pytest.mark.parametrize(
    "path", ["/api/v1/nope", "/api/nope", "/api/v2/runs", "/api/v1/runs/1/nope", "/api/"]
)
def test_an_unknown_path_answers_404_in_the_envelope(owner_api, path):
    error = assert_error(owner_api.get(path), 404, "NOT_FOUND")

    assert path in error["message"]


def test_an_unknown_path_answers_404_to_an_anonymous_client_too(anonymous_client):
    assert_error(anonymous_client.get("/api/v1/nope"), 404, "NOT_FOUND")


@pytest.mark.parametrize(
    "method, path, allowed",
    [
        ("get", TASK, ["POST"]),
        ("put", TASK, ["POST"]),
        ("delete", "/api/v1/runs/1", ["GET"]),
        ("post", "/api/v1/runs", ["GET"]),
        ("patch", "/api/v1/runs/1/events", ["GET"]),
        ("post", "/api/v1/tools", ["GET"]),
        ("post", "/api/v1/health", ["GET"]),
    ],
)
def test_a_wrong_method_answers_405_in_the_envelope(owner_api, method, path, allowed):
    response = getattr(owner_api, method)(path)

    error = assert_error(response, 405, "METHOD_NOT_ALLOWED")
    assert method.upper() in error["message"]
    assert error["details"] == {"method": method.upper(), "allowed_methods": allowed}
    assert response["Allow"] == ", ".join(allowed)


def test_a_wrong_method_answers_405_before_asking_who_calls(anonymous_client):
    assert_error(anonymous_client.get(TASK), 405, "METHOD_NOT_ALLOWED")


def test_a_body_that_is_not_json_answers_400_with_the_parser_error(owner_api, llm_configured):
    response = owner_api.post(TASK, data='{"task": ', content_type="application/json")

    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert error["message"] == "The request body is not valid JSON"
    assert "Expecting value" in error["details"]["error"]


def test_a_body_over_the_upload_limit_answers_413(owner_api, llm_configured, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000

    response = submit(owner_api, task="x" * 2000)

    error = assert_error(response, 413, "PAYLOAD_TOO_LARGE")
    assert error["details"] == {"max_bytes": 1000}
    assert not Task.objects.exists()


def test_validation_errors_name_each_field_and_what_is_wrong(owner_api, llm_configured):
    response = submit(owner_api, task=5, context=[], max_tokens=0)

    error = assert_error(response, 400, "VALIDATION_ERROR")
    fields = {e["field"]: e["message"] for e in error["details"]["errors"]}
    assert set(fields) == {"task", "context", "max_tokens"}
    assert all(fields.values())
    assert error["message"].startswith("Invalid request: ")


def test_each_error_has_its_own_trace_id(owner_api):
    first = assert_error(owner_api.get("/api/v1/nope"), 404, "NOT_FOUND")
    second = assert_error(owner_api.get("/api/v1/nope"), 404, "NOT_FOUND")

    assert first["trace_id"] != second["trace_id"]


def test_a_successful_answer_is_not_an_envelope(owner_api):
    body = owner_api.get("/api/v1/runs").json()

    assert body["success"] is True
    assert "error" not in body


def test_the_openapi_schema_and_docs_still_answer(owner_api):
    schema = owner_api.get("/api/openapi.json")
    docs = owner_api.get("/api/docs")

    assert schema.status_code == 200
    paths = json.loads(schema.content)["paths"]
    assert {"/api/v1/agent/task", "/api/v1/runs", "/api/v1/tools", "/api/v1/health"} <= set(paths)
    assert docs.status_code == 200
