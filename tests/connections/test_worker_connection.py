"""A task runs on the LLM connection its person picked, through a real Celery worker: the
requests go to that connection's server (a second scripted one), and the worker keeps the
connection's health and capability notes from its real calls."""

import socket

import pytest

from agents_app.models import ConnectionStatus, LLMConnection
from tests.support.api import submit
from tests.support.llm_server import ScriptedLLMServer
from tests.support.script import tool_call
from tests.support.waiting import wait_for_run

pytestmark = pytest.mark.integration

DIRECT = {
    "match": "AGENTDESK:DIRECT",
    "replies": [
        tool_call("write_file", path="hello.txt", content="hello\n"),
        tool_call("finish_task", result="hello.txt"),
    ],
}


@pytest.fixture(scope="module")
def module_worker_env():
    # A connection that cannot be reached fails at its first attempt, not after backoff.
    return {"LLM_MAX_RETRIES": "0"}


@pytest.fixture
def second_llm():
    """Another scripted OpenAI-wire server, with an address of its own."""
    with ScriptedLLMServer() as server:
        yield server


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_on(owner_api, connection: str):
    response = submit(
        owner_api, task="Write hello to hello.txt", fast_path=True, connection=connection
    )
    assert response.status_code == 202, response.content
    return wait_for_run(response.json()["run_id"])


def test_a_task_on_a_second_connection_is_answered_by_its_server_alone(
    llm, second_llm, shared_worker, owner_api
):
    second_llm.script([DIRECT])
    connection = LLMConnection.objects.create(
        name="second", base_url=second_llm.base_url, model="second-model"
    )

    run = run_on(owner_api, "second")

    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert (run.connection_id, run.llm_model) == (connection.pk, "second-model")
    assert len(second_llm.requests) == 2
    assert {body["model"] for body in second_llm.requests} == {"second-model"}
    assert llm.requests == []
    connection.refresh_from_db()
    assert (connection.status, connection.last_error) == (ConnectionStatus.OK, "")
    assert connection.capabilities["tools"] == "native"


def test_the_worker_notes_what_a_connection_s_server_does_not_accept(
    llm, second_llm, shared_worker, owner_api
):
    second_llm.script([DIRECT], options={"reject_stream_options": True})
    connection = LLMConnection.objects.create(
        name="older", base_url=second_llm.base_url, model="older-model"
    )

    run = run_on(owner_api, "older")

    assert run.status == "succeeded", (run.error_code, run.error_message)
    connection.refresh_from_db()
    assert connection.capabilities["stream_options"] is False
    assert connection.status == ConnectionStatus.OK


def test_a_connection_whose_server_is_gone_is_marked_broken_with_the_reason(
    llm, shared_worker, owner_api
):
    port = closed_port()
    connection = LLMConnection.objects.create(
        name="gone", base_url=f"http://127.0.0.1:{port}/v1", model="m"
    )

    run = run_on(owner_api, "gone")

    assert (run.status, run.error_code) == ("failed", "CONNECTION_REFUSED"), run.error_message
    connection.refresh_from_db()
    assert connection.status == ConnectionStatus.BROKEN
    assert f"cannot reach the LLM server at http://127.0.0.1:{port}/v1" in connection.last_error
    assert connection.last_checked_at is not None
    assert llm.requests == []
