"""The contract agent tools over MCP: the same services, shapes, ownership and errors as
/api/v1/agents. No worker runs: an attempt started stays queued (running), unless a test
drives it in this process with execute_run and a scripted provider."""

import pytest

from agents_app.contracts.logs import log_path
from agents_app.models import ContractAgent, KillSwitch, Run, RunEvent
from agents_app.worker.execution import execute_run
from tests.api.mcp_server.test_tools import error_of
from tests.support.script import json_reply
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import make_registry

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def logs(settings, tmp_path):
    settings.AGENT_LOG_DIR = tmp_path / "logs"
    return settings.AGENT_LOG_DIR


def called(client, tool, **arguments) -> dict:
    result = client.call(tool, arguments)
    assert not result.is_error, result
    return result.structured_content


@pytest.mark.slow(
    reason="the MCP endpoint's first test: starts daphne and a worker, then runs three attempts of an agent"
)
def test_an_agent_is_created_started_stopped_and_restarted_with_a_new_contract(owner_mcp, owner):
    agent = called(owner_mcp, "create_agent", contract="Echo a.", name="Echoer", max_turns=3)
    assert (agent["status"], agent["budgets"]["max_turns"]) == ("ready", 3)

    started = called(owner_mcp, "start_agent", agent_id=agent["id"])
    stopped = called(owner_mcp, "stop_agent", agent_id=agent["id"])
    restarted = called(owner_mcp, "restart_agent", agent_id=agent["id"], contract="Echo b.")

    assert ContractAgent.objects.get().owner == owner
    first, second = Run.objects.order_by("id")
    assert (started["status"], started["attempt"]["run_id"]) == ("running", first.pk)
    assert (stopped["status"], stopped["reason"]) == ("stopped", "stopped by the person")
    assert (restarted["status"], restarted["attempt"]["number"]) == ("running", 2)
    assert (second.task.text, first.status) == ("Echo b.", "cancelled")
    listed = called(owner_mcp, "list_agents")
    assert [(a["name"], a["attempt"]["run_id"]) for a in listed["results"]] == [
        ("Echoer", second.pk)
    ]


def test_stop_agent_now_asks_the_worker_to_cut_the_request_in_flight(owner_mcp):
    agent = called(owner_mcp, "create_agent", contract="Echo a.")
    run_id = called(owner_mcp, "start_agent", agent_id=agent["id"])["attempt"]["run_id"]
    Run.objects.filter(pk=run_id).update(status="running", lease_owner="worker-1")

    stopping = called(owner_mcp, "stop_agent", agent_id=agent["id"], now=True)

    assert stopping["status"] == "running"
    assert RunEvent.objects.get(run_id=run_id, type="cancel_requested").payload == {"now": True}


def test_a_completed_attempt_is_read_as_status_and_log(owner_mcp, owner):
    agent = called(owner_mcp, "create_agent", contract="Say hi.")
    run_id = called(owner_mcp, "start_agent", agent_id=agent["id"])["attempt"]["run_id"]
    provider = ScriptedProvider(
        [
            {"match": "AGENTDESK:EVALUATE", "replies": [json_reply({"met": True, "reason": "hi"})]},
            {"match": "AGENTDESK:CONTRACT", "replies": [{"content": "hi"}]},
        ]
    )
    execute_run(run_id, provider=provider, registry=make_registry())

    status = called(owner_mcp, "agent_status", agent_id=agent["id"])
    log = called(owner_mcp, "read_agent_log", agent_id=agent["id"])
    first = called(owner_mcp, "read_agent_log", agent_id=agent["id"], attempt=1)

    assert (status["status"], status["reason"]) == ("completed", "hi")
    assert (status["attempt"]["status"], status["attempt"]["cycles"]) == ("succeeded", 1)
    assert log["name"] == log_path(Run.objects.get()).name == first["name"]
    assert "[agent] hi" in log["text"] and "[evaluation] contract met: hi" in log["text"]
    assert (log["write_error"], log["attempt"]["number"]) == (None, 1)


@pytest.mark.parametrize(
    "tool, arguments",
    [
        ("agent_status", {}),
        ("start_agent", {}),
        ("stop_agent", {}),
        ("restart_agent", {"contract": "mine now"}),
        ("read_agent_log", {}),
    ],
)
def test_another_users_agent_is_not_found(owner_mcp, outsider_mcp, tool, arguments):
    agent = called(owner_mcp, "create_agent", contract="secret")
    called(owner_mcp, "start_agent", agent_id=agent["id"])

    error = error_of(outsider_mcp.call(tool, {"agent_id": agent["id"], **arguments}))

    assert (error["code"], error["http_status"]) == ("NOT_FOUND", 404)
    assert called(outsider_mcp, "list_agents")["count"] == 0
    assert ContractAgent.objects.get().contract == "secret"
    assert list(Run.objects.values_list("status", flat=True)) == ["queued"]


def test_start_while_running_and_restart_while_running_are_conflicts(owner_mcp):
    agent = called(owner_mcp, "create_agent", contract="Echo a.")
    called(owner_mcp, "start_agent", agent_id=agent["id"])

    again = error_of(owner_mcp.call("start_agent", {"agent_id": agent["id"]}))
    restart = error_of(owner_mcp.call("restart_agent", {"agent_id": agent["id"]}))

    assert (again["code"], restart["code"]) == ("CONFLICT", "CONFLICT")
    assert Run.objects.count() == 1


def test_start_while_the_kill_switch_is_engaged_is_service_unavailable(owner_mcp):
    agent = called(owner_mcp, "create_agent", contract="Echo a.")
    KillSwitch.objects.update_or_create(pk=1, defaults={"engaged": True, "reason": "drill"})

    error = error_of(owner_mcp.call("start_agent", {"agent_id": agent["id"]}))

    assert (error["code"], error["http_status"]) == ("SERVICE_UNAVAILABLE", 503)
    assert not Run.objects.exists()


def test_an_agent_never_started_has_no_log(owner_mcp):
    agent = called(owner_mcp, "create_agent", contract="Echo a.")

    error = error_of(owner_mcp.call("read_agent_log", {"agent_id": agent["id"]}))

    assert error["code"] == "NOT_FOUND"


@pytest.mark.parametrize(
    "tool, arguments, field",
    [
        ("create_agent", {"contract": "  "}, "contract"),
        ("create_agent", {"contract": "go", "max_turns": 0}, "max_turns"),
        ("create_agent", {"contract": "go", "max_tokens": "many"}, "max_tokens"),
        ("create_agent", {"contract": "go", "name": "x" * 101}, "name"),
        ("start_agent", {"agent_id": 2**63}, "agent_id"),
        ("read_agent_log", {"agent_id": 1, "attempt": 0}, "attempt"),
    ],
)
def test_bad_arguments_are_a_validation_error_naming_them(owner_mcp, tool, arguments, field):
    error = error_of(owner_mcp.call(tool, arguments))

    assert error["code"] == "VALIDATION_ERROR"
    assert [e["field"] for e in error["details"]["errors"]] == [field]
    assert not ContractAgent.objects.exists()
