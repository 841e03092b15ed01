"""Helpers for the REST API tests: the error envelope, API keys, JSON requests, run states."""

import json
import re
from datetime import datetime
from typing import Any

from django.test import Client

from agents_app.models import ApiKey, Run, RunStatus
from agents_app.runs.lifecycle import finish
from agents_app.runs.writer import locked_run

TRACE_ID = re.compile(r"req-[0-9a-f]{12}")

# The statuses a run passes through on its way to `status`, from queued.
PATH_TO = {
    RunStatus.PLANNING: [RunStatus.PLANNING],
    RunStatus.RUNNING: [RunStatus.PLANNING, RunStatus.RUNNING],
    RunStatus.VERIFYING: [RunStatus.PLANNING, RunStatus.RUNNING, RunStatus.VERIFYING],
}


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


def make_api_key(user, name: str = "script", **fields: Any) -> str:
    """Store a key for `user` as the admin does and return the raw key."""
    raw = ApiKey.generate()
    key = ApiKey(user=user, name=name, **fields)
    key.set_key(raw)
    key.save()
    return raw


def key_client(raw_key: str) -> Client:
    """A script client: a bearer key, no cookies, CSRF enforced as for any real client."""
    return Client(enforce_csrf_checks=True, headers={"authorization": f"Bearer {raw_key}"})


def post_json(client: Client, path: str, body: Any = None, **extra: Any):
    data = "" if body is None else json.dumps(body)
    return client.post(path, data=data, content_type="application/json", **extra)


def submit(client: Client, headers: dict[str, str] | None = None, **body: Any):
    """POST a task; `body` adds to or replaces the default task text."""
    payload = {"task": "Summarise the notes", **body}
    return post_json(client, "/api/v1/agent/task", payload, headers=headers)


def advance(run: Run, status: str) -> Run:
    """Move a queued run to planning, running or verifying as the engine would."""
    with locked_run(run.pk) as w:
        for step in PATH_TO[status]:
            w.transition(step)
    run.refresh_from_db()
    return run


def end(run: Run, status: str, code: str = "", message: str = "", response: str = "") -> Run:
    """Finish a run through the engine's own `finish`, from wherever it stands."""
    if status == RunStatus.SUCCEEDED:
        advance(run, RunStatus.VERIFYING)
    with locked_run(run.pk) as w:
        if response:
            w.set(final_response=response)
        finish(w, status, code, message)
    run.refresh_from_db()
    return run
