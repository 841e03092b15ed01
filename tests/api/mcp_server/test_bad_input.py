"""Bad arguments to the MCP tools are a VALIDATION_ERROR naming the argument, as over REST,
never an INTERNAL_ERROR from the database driver; and /mcp answers its own errors in JSON."""

import json

import httpx
import pytest

from agents_app.models import Task
from tests.api.mcp_server.test_tools import error_of

pytestmark = pytest.mark.django_db(transaction=True)

BIGINT_OVERFLOW = 2**63
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def raw_call(web, key: str, tool: str, arguments: str) -> dict:
    """tools/call with the arguments as written. (A lone surrogate never gets this far: the
    SDK's JSON parser answers it with a JSON-RPC parse error.)"""
    body = (
        '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", '
        f'"params": {{"name": "{tool}", "arguments": {arguments}}}}}'
    )
    response = httpx.post(
        f"{web.url}/mcp",
        content=body.encode(),
        headers={
            **MCP_HEADERS,
            "Authorization": f"Bearer {key}",
            "Content-Type": "application/json",
        },
        timeout=15,
    )
    assert response.status_code == 200, response.text
    return response.json()


def validation_fields(error: dict) -> list[str]:
    assert error["code"] == "VALIDATION_ERROR", error
    return [problem["field"] for problem in error["details"]["errors"]]


@pytest.mark.parametrize("field", ["max_tokens", "max_tool_calls"])
@pytest.mark.parametrize("value", [BIGINT_OVERFLOW, 2**31])
def test_submit_task_refuses_a_budget_beyond_its_column(owner_mcp, field, value):
    result = owner_mcp.call("submit_task", {"task": "Go", field: value})

    assert validation_fields(error_of(result)) == [field]
    assert not Task.objects.exists()


@pytest.mark.parametrize(
    "tool, arguments, field",
    [
        ("list_runs", {"page": BIGINT_OVERFLOW}, "page"),
        ("list_runs", {"page": 2**62}, "page"),
        ("list_approvals", {"page": 2**62}, "page"),
        ("list_approvals", {"run_id": BIGINT_OVERFLOW}, "run_id"),
        ("get_run", {"run_id": BIGINT_OVERFLOW}, "run_id"),
    ],
)
def test_list_tools_refuse_a_huge_page_or_id(owner_mcp, tool, arguments, field):
    assert validation_fields(error_of(owner_mcp.call(tool, arguments))) == [field]


@pytest.mark.parametrize(
    "arguments, field",
    [
        ('{"task": "Sum\\u0000marise"}', "task"),
        ('{"task": "Go", "context": {"notes": "a\\u0000b"}}', "context"),
        ('{"task": "Go", "context": {"x": NaN}}', "context"),
    ],
)
def test_submit_task_refuses_what_no_database_can_store(web, owner_key, arguments, field):
    answer = raw_call(web, owner_key, "submit_task", arguments)

    assert answer["result"]["isError"] is True
    error = json.loads(answer["result"]["content"][0]["text"])["error"]
    assert validation_fields(error) == [field]
    assert not Task.objects.exists()


def test_a_body_over_the_limit_is_the_413_envelope_not_plain_text(web, owner_key):
    response = httpx.post(
        f"{web.url}/mcp",
        content=b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "pad": "'
        + b"x" * 10_000_000
        + b'"}',
        headers={
            **MCP_HEADERS,
            "Authorization": f"Bearer {owner_key}",
            "Content-Type": "application/json",
        },
        timeout=30,
    )

    assert response.status_code == 413
    assert response.headers["Content-Type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == "PAYLOAD_TOO_LARGE"
    assert error["details"]["max_bytes"] > 0
    assert response.headers["X-Trace-Id"] == error["trace_id"]
