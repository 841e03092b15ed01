"""The OpenAPI document declares every error an operation answers, in the envelope's schema, and
input fields carry the bounds the endpoints enforce: a client generated from it (or a
schemathesis run, see .ci/schema_check.sh) meets no undocumented status and no surprise."""

import pytest

ENVELOPE = {"$ref": "#/components/schemas/ErrorEnvelope"}


@pytest.fixture
def openapi(client) -> dict:
    return client.get("/api/openapi.json").json()


def operations(openapi: dict):
    for path, methods in openapi["paths"].items():
        for method, operation in methods.items():
            yield path, method, operation


def test_every_error_response_is_the_envelope(openapi):
    for path, method, operation in operations(openapi):
        if path.endswith("/health"):
            continue  # its 503 is the health report itself
        error_statuses = [s for s in operation["responses"] if int(s) >= 400]
        assert error_statuses, (method, path)
        for status in error_statuses:
            schema = operation["responses"][status]["content"]["application/json"]["schema"]
            assert schema == ENVELOPE, (method, path, status)


def test_each_operation_declares_the_errors_its_shape_can_answer(openapi):
    for path, method, operation in operations(openapi):
        declared = set(operation["responses"])
        if operation.get("security"):
            assert "401" in declared, (method, path)
        if operation.get("parameters") or "requestBody" in operation:
            assert "400" in declared, (method, path)
        if "{" in path:
            assert "404" in declared, (method, path)
        if "requestBody" in operation:
            assert "413" in declared, (method, path)


@pytest.mark.parametrize(
    "path, method, status",
    [
        ("/api/v1/runs/{run_id}/cancel", "post", "409"),
        ("/api/v1/runs/{run_id}/restart", "post", "409"),
        ("/api/v1/approvals/{approval_id}", "post", "409"),
        ("/api/v1/preferences", "put", "403"),
        ("/api/v1/agent/task", "post", "503"),
    ],
)
def test_an_operations_own_errors_are_declared(openapi, path, method, status):
    assert status in openapi["paths"][path][method]["responses"]


def test_the_envelope_schema_describes_the_envelope(openapi):
    schemas = openapi["components"]["schemas"]
    envelope = schemas["ErrorEnvelope"]
    assert set(envelope["required"]) == {"success", "error"}
    detail = schemas["ErrorDetail"]
    assert set(detail["required"]) == {
        "code",
        "message",
        "http_status",
        "details",
        "trace_id",
        "timestamp",
    }


def body_schema(openapi: dict, name: str) -> dict:
    return openapi["components"]["schemas"][name]["properties"]


def test_integers_in_bodies_and_queries_are_bounded(openapi):
    task = body_schema(openapi, "TaskIn")
    for field in ("max_tokens", "max_tool_calls", "approval_timeout"):
        (bounded,) = [s for s in task[field]["anyOf"] if s.get("type") == "integer"]
        assert bounded["maximum"] == 2**31 - 1, field
    for name in ("RunListQuery", "ApprovalQuery", "DeliveryQuery"):
        assert body_schema(openapi, name)["page"]["maximum"] <= 10**6, name


def test_text_the_endpoints_refuse_empty_is_not_empty_in_the_schema(openapi):
    assert body_schema(openapi, "TaskIn")["task"]["minLength"] == 1
    assert body_schema(openapi, "RuleIn")["tool"]["minLength"] == 1
    assert body_schema(openapi, "WebhookIn")["url"]["minLength"] == 1
    assert body_schema(openapi, "WebhookIn")["events"]["minItems"] == 1
