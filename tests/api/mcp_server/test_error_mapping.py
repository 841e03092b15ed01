"""How AgentDeskMCP turns a tool's failure into a result, in process (no HTTP needed)."""

import json

import anyio
from pydantic import BaseModel

from agents_app.api.mcp_server import AgentDeskMCP
from agents_app.core.errors import DomainError


class Answer(BaseModel):
    value: int


def server_with_tools() -> AgentDeskMCP:
    server = AgentDeskMCP("test")

    @server.tool()
    def refuses() -> Answer:
        raise DomainError("CONFLICT", "Run 3 already finished (succeeded)", {"status": "ok"})

    @server.tool()
    def crashes() -> Answer:
        raise RuntimeError("database password is hunter2")

    @server.tool()
    def returns_the_wrong_shape() -> Answer:
        return {"value": "not a number"}

    @server.tool()
    def doubles(value: int) -> Answer:
        return Answer(value=value * 2)

    return server


def call(tool: str, arguments: dict) -> tuple[bool, dict]:
    result = anyio.run(server_with_tools().call_tool, tool, arguments)
    return result.is_error, json.loads(result.content[0].text)


def test_a_domain_error_keeps_its_code_message_and_details():
    is_error, body = call("refuses", {})

    assert is_error
    assert body["error"]["code"] == "CONFLICT"
    assert body["error"]["message"] == "Run 3 already finished (succeeded)"
    assert body["error"]["details"] == {"status": "ok"}
    assert body["error"]["http_status"] == 409


def test_a_crash_is_an_internal_error_that_tells_nothing_of_the_exception():
    is_error, body = call("crashes", {})

    assert is_error
    assert body["error"]["code"] == "INTERNAL_ERROR"
    assert "hunter2" not in json.dumps(body)


def test_output_that_fails_its_model_is_our_bug_not_the_callers():
    assert call("returns_the_wrong_shape", {})[1]["error"]["code"] == "INTERNAL_ERROR"


def test_arguments_that_fail_the_schema_name_the_field():
    is_error, body = call("doubles", {"value": "many"})

    assert is_error
    assert body["error"]["code"] == "VALIDATION_ERROR"
    assert [e["field"] for e in body["error"]["details"]["errors"]] == ["value"]


def test_an_unknown_tool_lists_the_ones_there_are():
    is_error, body = call("no_such_tool", {})

    assert is_error
    assert body["error"]["code"] == "TOOL_NOT_FOUND"
    assert body["error"]["details"]["available_tools"] == [
        "crashes",
        "doubles",
        "refuses",
        "returns_the_wrong_shape",
    ]


def test_a_good_call_has_structured_output():
    result = anyio.run(server_with_tools().call_tool, "doubles", {"value": 21})

    assert not result.is_error
    assert result.structured_content == {"value": 42}
