"""The /mcp endpoint inside the one ASGI app: API-key auth, and the rest of the site untouched."""

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from agents_app.models import ApiKey, Run
from tests.support.mcp_client import McpClient

pytestmark = pytest.mark.django_db(transaction=True)

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "curl", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def post_initialize(web, **headers) -> httpx.Response:
    return httpx.post(f"{web.url}/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **headers})


def assert_unauthorized(response: httpx.Response) -> None:
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    body = response.json()
    assert body["success"] is False
    assert body["error"]["code"] == "UNAUTHORIZED"
    assert body["error"]["http_status"] == 401
    assert body["error"]["details"] == {}
    assert body["error"]["trace_id"].startswith("req-")
    assert response.headers["X-Trace-Id"] == body["error"]["trace_id"]
    assert "timestamp" in body["error"]


def test_without_a_key_the_client_cannot_connect(web, transactional_db):
    with pytest.raises(MCPError):
        McpClient(web.url, None).list_tools()

    assert_unauthorized(post_initialize(web))


def test_with_a_wrong_key_the_client_cannot_connect(web, transactional_db):
    with pytest.raises(MCPError):
        McpClient(web.url, "adk_not-a-real-key").list_tools()

    assert_unauthorized(post_initialize(web, Authorization="Bearer adk_not-a-real-key"))
    assert_unauthorized(post_initialize(web, Authorization="Basic dXNlcjpwYXNz"))


def test_a_revoked_key_is_refused(web, owner_key):
    ApiKey.objects.update(revoked=True)

    with pytest.raises(MCPError):
        McpClient(web.url, owner_key).call("submit_task", {"task": "Anything"})

    assert_unauthorized(post_initialize(web, Authorization=f"Bearer {owner_key}"))
    assert not Run.objects.exists()


def test_a_valid_key_answers_the_handshake_with_json_and_no_session(web, owner_key):
    response = post_initialize(web, Authorization=f"Bearer {owner_key}")

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    # Stateless: no session for a load balancer to pin to one process.
    assert "mcp-session-id" not in response.headers
    assert response.json()["result"]["serverInfo"]["name"] == "agentdesk"


def test_a_path_below_mcp_is_not_an_endpoint(web, owner_key):
    response = httpx.post(
        f"{web.url}/mcp/other",
        json=INITIALIZE,
        headers={**MCP_HEADERS, "Authorization": f"Bearer {owner_key}"},
    )

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "NOT_FOUND"


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_only_post_is_allowed_as_there_is_no_stream_or_session(web, owner_key, method):
    response = httpx.request(
        method,
        f"{web.url}/mcp",
        headers={**MCP_HEADERS, "Authorization": f"Bearer {owner_key}"},
        timeout=5,
    )

    assert response.status_code == 405
    assert response.headers["Allow"] == "POST"
    assert response.json()["error"]["code"] == "METHOD_NOT_ALLOWED"


def test_the_rest_of_the_site_still_works_through_the_same_app(web, owner_key):
    health = httpx.get(f"{web.url}/api/v1/health")
    runs = httpx.get(f"{web.url}/api/v1/runs", headers={"Authorization": f"Bearer {owner_key}"})
    lookalike = httpx.get(f"{web.url}/mcpx")

    assert health.status_code == 200
    assert health.json()["services"]["database"] == "ok"
    assert runs.status_code == 200
    assert runs.json()["count"] == 0
    assert lookalike.status_code == 404  # Django's, not the MCP endpoint's


def test_a_client_speaking_the_stateless_2026_protocol_can_use_the_tools(web, owner_key, owner):
    async def scenario():
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {owner_key}"}, timeout=15)
        async with http, Client(streamable_http_client(f"{web.url}/mcp", http_client=http)) as c:
            submitted = await c.call_tool("submit_task", {"task": "Modern times"})
            return c.session.protocol_version, submitted

    version, submitted = anyio.run(scenario)

    assert version == "2026-07-28"
    assert Run.objects.get(pk=submitted.structured_content["run_id"]).owner == owner
