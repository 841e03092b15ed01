"""The MCP endpoint throttles refused keys as REST does (core/throttle), in the envelope."""

import httpx
import pytest

from agents_app.models import ApiKey, AuditEvent
from tests.api.mcp_server.test_endpoint import post_initialize

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dialect]  # Redis counts


def test_random_keys_end_in_429_with_the_envelope_and_retry_after(web, settings):
    limit = settings.API_KEY_FAILURE_LIMIT
    responses: list[httpx.Response] = [
        post_initialize(web, Authorization=f"Bearer {ApiKey.generate()}") for _ in range(limit + 5)
    ]

    assert [r.status_code for r in responses] == [401] * limit + [429] * 5
    last = responses[-1]
    body = last.json()
    assert body["success"] is False
    assert body["error"]["code"] == "RATE_LIMITED"
    assert body["error"]["http_status"] == 429
    retry_after = int(last.headers["Retry-After"])
    assert 0 < retry_after <= settings.AUTH_FAILURE_WINDOW_SECONDS
    assert body["error"]["details"] == {"retry_after_seconds": retry_after}
    assert last.headers["X-Trace-Id"] == body["error"]["trace_id"]
    refused = AuditEvent.objects.filter(action="api_key.refuse")
    assert refused.count() == limit
    assert set(refused.values_list("interface", flat=True)) == {"mcp"}
