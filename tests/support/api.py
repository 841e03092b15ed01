"""Talking to the REST API: JSON requests, submitting a task, the error envelope. The clients
that call it are in clients.py."""

import json
import re
from datetime import datetime
from typing import Any

from django.test import Client

TRACE_ID = re.compile(r"req-[0-9a-f]{12}")


def assert_error(response, status: int, code: str) -> dict[str, Any]:
    """Assert seed 000's error envelope, whole, and return its `error` object."""
    assert response.status_code == status, response.content[:500]
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["success"] is False
    error = body["error"]
    assert {"code", "message", "http_status", "details", "trace_id", "timestamp"} <= set(error)
    assert error["code"] == code
    assert isinstance(error["message"], str) and error["message"].strip()
    assert error["http_status"] == status
    assert isinstance(error["details"], dict)
    assert TRACE_ID.fullmatch(error["trace_id"]), error["trace_id"]
    assert response["X-Trace-Id"] == error["trace_id"]
    assert datetime.fromisoformat(error["timestamp"]).tzinfo is not None
    return error


def post_json(client: Client, path: str, body: Any = None, **extra: Any):
    data = "" if body is None else json.dumps(body)
    return client.post(path, data=data, content_type="application/json", **extra)


def put_json(client: Client, path: str, body: Any):
    return client.put(path, data=json.dumps(body), content_type="application/json")


def submit(client: Client, headers: dict[str, str] | None = None, **body: Any):
    """POST a task; `body` adds to or replaces the default task text."""
    payload = {"task": "Summarise the notes", **body}
    return post_json(client, "/api/v1/agent/task", payload, headers=headers)
