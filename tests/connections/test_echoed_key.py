"""A connection whose server echoes the API key it was sent in its errors (as some gateways do:
"Received API Key = Bearer <key>"), through a real Celery worker: after a task on it, the key
is in no answer to a non-staff person, no line of the worker's log and no row, in any of its
common encodings; staff see the server's words, redacted."""

import base64
import json

import pytest
from django.db.models import Model

from agents_app.models import (
    AuditEvent,
    ConnectionStatus,
    LLMConnection,
    Run,
    RunEvent,
    Step,
    ToolCall,
)
from tests.support.api import submit
from tests.support.llm_server import ScriptedLLMServer
from tests.support.waiting import wait_for_run

pytestmark = pytest.mark.integration

# Only the worker's environment holds it: the key reaches the server from there alone.
SECRET = "sk-gw-EchoTestKey0123456789abcdefXYZ"
ECHOED = "Received API Key = {authorization}"


@pytest.fixture(scope="module")
def module_worker_env():
    return {"ECHO_TEST_LLM_KEY": SECRET, "LLM_MAX_RETRIES": "2"}


@pytest.fixture
def gateway():
    with ScriptedLLMServer() as server:
        yield server


def forms(secret: str) -> list[str]:
    raw = secret.encode()
    return [
        secret,
        secret.lower(),
        secret.upper(),
        raw.hex(),
        base64.b64encode(raw).decode().rstrip("="),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
    ]


def leaks(text: str) -> list[str]:
    return [form for form in forms(SECRET) if form in text]


def stored(model: type[Model]) -> str:
    return json.dumps(list(model.objects.values()), default=str)


def test_a_key_the_server_echoes_reaches_no_answer_log_or_row(
    llm, gateway, shared_worker, owner_api, owner_session, staff_api
):
    gateway.script([{"match": "", "repeat": True, "replies": [{"status": 500, "error": ECHOED}]}])
    LLMConnection.objects.create(
        name="gateway",
        base_url=gateway.base_url,
        model="gw-model",
        api_key="${ECHO_TEST_LLM_KEY}",
    )

    response = submit(owner_api, task="Say hello", fast_path=True, connection="gateway")
    assert response.status_code == 202, response.content
    run = wait_for_run(response.json()["run_id"])

    # The server did receive the key, and said it back.
    assert gateway.requests, "the worker never called the gateway"
    assert (run.status, run.error_code) == ("failed", "MAX_RETRIES_EXCEEDED"), run.error_message
    connection = LLMConnection.objects.get(name="gateway")
    assert connection.status == ConnectionStatus.BROKEN
    answers = {
        "connections": owner_api.get("/api/v1/connections").content.decode(),
        "run": owner_api.get(f"/api/v1/runs/{run.pk}").content.decode(),
        "events": owner_api.get(f"/api/v1/runs/{run.pk}/events").content.decode(),
        "run page": owner_session.get(f"/runs/{run.pk}/").content.decode(),
    }
    assert {name: leaks(text) for name, text in answers.items()} == dict.fromkeys(answers, [])
    # Non-staff see the state and a generic reason; staff see the server's words, redacted.
    [mine] = [
        c for c in json.loads(answers["connections"])["connections"] if c["name"] == "gateway"
    ]
    assert mine["health"]["status"] == "broken"
    assert "Received API Key" not in mine["health"]["reason"]
    [theirs] = [
        c
        for c in staff_api.get("/api/v1/connections").json()["connections"]
        if c["name"] == "gateway"
    ]
    assert "Received API Key = Bearer [redacted]" in theirs["health"]["reason"]
    assert "Received API Key" not in answers["run"] + answers["events"]
    assert leaks(shared_worker.log()) == []
    tables = {m.__name__: stored(m) for m in (LLMConnection, Run, Step, RunEvent, AuditEvent)}
    tables["ToolCall"] = stored(ToolCall)
    assert {name: leaks(text) for name, text in tables.items()} == dict.fromkeys(tables, [])
