"""/api/v1/agents: create, list, read and change a contract agent; Start, Stop and Restart;
its attempts, an attempt's transcript after a seq and its log file. No worker runs here: an
attempt started stays queued (so it is running), unless a test drives it in-process with
execute_run and a scripted provider."""

import json

import pytest
from asgiref.sync import async_to_sync

from agents_app.contracts.logs import log_path
from agents_app.models import (
    AuditEvent,
    ContractAgent,
    ConversationEntry,
    KillSwitch,
    LLMConnection,
    Run,
    RunEvent,
)
from agents_app.worker.execution import execute_run
from tests.support.api import assert_error, post_json
from tests.support.conversations import api_socket, idle, of_type, receive_until, rows_sent
from tests.support.script import json_reply, tool_call
from tests.support.scripted_provider import ScriptedProvider
from tests.support.sockets import refusal
from tests.support.tools import EchoTool, make_registry

URL = "/api/v1/agents"
DEFAULTS = ["max_turns", "max_tokens", "max_seconds"]

pytestmark = pytest.mark.usefixtures("llm_configured")


@pytest.fixture(autouse=True)
def logs(settings, tmp_path):
    settings.AGENT_LOG_DIR = tmp_path / "logs"
    return settings.AGENT_LOG_DIR


def create(client, contract="Echo a.", **body):
    response = post_json(client, URL, {"contract": contract, **body})
    assert response.status_code == 201, response.content
    return response.json()


def start(client, agent_id):
    return post_json(client, f"{URL}/{agent_id}/start")


def patch_json(client, path, body):
    return client.patch(path, data=json.dumps(body), content_type="application/json")


def fields(error: dict) -> list[str]:
    return [problem["field"] for problem in error["details"]["errors"]]


def evaluation(met, reason, *evidence):
    return json_reply({"met": met, "reason": reason, "evidence": list(evidence)})


def run_to_completion(run_id: int) -> Run:
    """Drive the attempt in this process: it echoes `a`, then judges its contract met."""
    provider = ScriptedProvider(
        [
            {"match": "AGENTDESK:EVALUATE", "replies": [evaluation(True, "a was echoed", 1)]},
            {
                "match": "AGENTDESK:CONTRACT",
                "replies": [{**tool_call("echo", text="a"), "content": "Echoing a."}],
            },
        ]
    )
    execute_run(run_id, provider=provider, registry=make_registry(EchoTool()))
    return Run.objects.get(pk=run_id)


def test_an_agent_is_created_ready_with_the_default_budgets(owner, owner_api, settings):
    body = create(owner_api, "Keep the notes tidy.")

    agent = ContractAgent.objects.get()
    assert agent.owner == owner
    assert body == {
        "id": agent.pk,
        "name": "Agent-1",
        "contract": "Keep the notes tidy.",
        "connection": None,
        "budgets": {
            "max_turns": settings.CONTRACT_MAX_TURNS,
            "max_tokens": settings.CONTRACT_MAX_TOKENS,
            "max_seconds": settings.CONTRACT_MAX_SECONDS,
            "defaults": DEFAULTS,
        },
        "status": "ready",
        "reason": "",
        "attempt": None,
        "is_open": True,
        "created_at": body["created_at"],
        "updated_at": body["updated_at"],
    }
    assert AuditEvent.objects.filter(action="agent.create", target=str(agent.pk)).count() == 1


def test_an_agent_is_created_with_its_name_connection_and_own_budgets(owner_api, settings):
    hosted = LLMConnection.objects.create(name="hosted", base_url="https://h.example/v1", model="m")

    body = create(owner_api, name="Tidy", connection="hosted", max_turns=3, max_seconds=60)

    assert body["name"] == "Tidy"
    assert body["connection"] == {"id": hosted.pk, "name": "hosted", "model": "m"}
    assert body["budgets"] == {
        "max_turns": 3,
        "max_tokens": settings.CONTRACT_MAX_TOKENS,
        "max_seconds": 60,
        "defaults": ["max_tokens"],
    }


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "contract"),
        ({"contract": "   "}, "contract"),
        ({"contract": "a\x00b"}, "contract"),
        ({"contract": "x" * 20_001}, "contract"),
        ({"contract": "go", "max_turns": 0}, "max_turns"),
        ({"contract": "go", "max_turns": "5"}, "max_turns"),
        ({"contract": "go", "max_tokens": True}, "max_tokens"),
        ({"contract": "go", "max_seconds": 2**40}, "max_seconds"),
        ({"contract": "go", "max_seconds": 1.5}, "max_seconds"),
        ({"contract": "go", "name": "x" * 101}, "name"),
        ({"contract": "go", "connection": 0}, "connection"),
        ({"contract": "go", "colour": "blue"}, "colour"),
    ],
)
def test_a_bad_field_on_create_is_a_400_naming_it_and_creates_nothing(owner_api, body, field):
    error = assert_error(post_json(owner_api, URL, body), 400, "VALIDATION_ERROR")

    assert field in fields(error)[0]
    assert not ContractAgent.objects.exists()


def test_an_unknown_connection_is_a_400_naming_the_field(owner_api):
    response = post_json(owner_api, URL, {"contract": "go", "connection": "nope"})

    assert assert_error(response, 400, "VALIDATION_ERROR")["details"]["field"] == "connection"
    assert not ContractAgent.objects.exists()


@pytest.mark.dialect
def test_the_list_is_yours_only_most_recently_started_first_and_paged(
    owner_api, outsider_api, django_assert_max_num_queries
):
    first = create(owner_api, name="first")
    second = create(owner_api, name="second")
    create(outsider_api, name="not yours")
    start(owner_api, first["id"])  # first is now the most recently changed

    with django_assert_max_num_queries(5):  # the same for a page of 1 or of 100
        body = owner_api.get(URL).json()
    page_two = owner_api.get(f"{URL}?page=2&page_size=1").json()

    assert body["count"] == 2
    assert [(a["name"], a["status"]) for a in body["results"]] == [
        ("first", "running"),
        ("second", "ready"),
    ]
    assert body["results"][0]["attempt"]["number"] == 1
    assert [a["id"] for a in page_two["results"]] == [second["id"]]
    assert (page_two["page"], page_two["page_size"]) == (2, 1)


def test_a_session_reads_the_same_agents_as_a_key(owner_api, owner_session):
    made = create(owner_api, name="both")

    assert owner_session.get(f"{URL}/{made['id']}").json()["name"] == "both"


def test_without_a_key_or_session_it_is_a_401(anonymous_client):
    assert_error(anonymous_client.get(URL), 401, "UNAUTHORIZED")


def test_start_queues_attempt_one_and_the_agent_is_running(owner, owner_api):
    agent = create(owner_api, "Echo a.", max_turns=4)

    response = start(owner_api, agent["id"])

    assert response.status_code == 201
    body = response.json()
    run = Run.objects.get()
    assert (run.kind, run.status, run.task.text) == ("contract", "queued", "Echo a.")
    assert (body["status"], body["reason"]) == ("running", "")
    assert body["attempt"] == {
        "number": 1,
        "run_id": run.pk,
        "conversation_id": run.conversation_id,
        "status": "queued",
        "outcome": "running",
        "reason": "",
        "started_at": None,
        "finished_at": None,
        "created_at": body["attempt"]["created_at"],
        "tokens_used": 0,
        "cycles": 0,
        "budgets": {"max_turns": 4, "max_tokens": run.max_tokens, "max_seconds": 1800},
        "log_name": log_path(run).name,
    }
    assert AuditEvent.objects.filter(action="agent.start", run=run).count() == 1


@pytest.mark.dialect
def test_start_while_running_is_a_409_and_starts_nothing(owner_api):
    agent = create(owner_api)
    start(owner_api, agent["id"])

    error = assert_error(start(owner_api, agent["id"]), 409, "CONFLICT")

    assert error["details"]["run_id"] == Run.objects.get().pk


def test_start_while_the_kill_switch_is_engaged_is_a_503_and_starts_nothing(owner_api):
    agent = create(owner_api)
    KillSwitch.objects.update_or_create(pk=1, defaults={"engaged": True, "reason": "drill"})

    assert_error(start(owner_api, agent["id"]), 503, "SERVICE_UNAVAILABLE")
    assert not Run.objects.exists()


def test_stop_cancels_the_attempt_and_the_agent_is_stopped_by_the_person(owner_api):
    agent = create(owner_api)
    start(owner_api, agent["id"])

    response = post_json(owner_api, f"{URL}/{agent['id']}/stop")

    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["reason"]) == ("stopped", "stopped by the person")
    assert body["attempt"]["status"] == "cancelled"
    assert AuditEvent.objects.filter(action="agent.stop").count() == 1


def test_stop_now_asks_the_worker_to_cut_the_request_in_flight(owner_api):
    agent = create(owner_api)
    run_id = start(owner_api, agent["id"]).json()["attempt"]["run_id"]
    Run.objects.filter(pk=run_id).update(status="running", lease_owner="worker-1")

    response = post_json(owner_api, f"{URL}/{agent['id']}/stop?now=true")

    assert response.status_code == 200 and response.json()["status"] == "running"
    cancel = RunEvent.objects.get(run_id=run_id, type="cancel_requested")
    assert cancel.payload == {"now": True}
    assert AuditEvent.objects.get(action="agent.stop").details == {"now": True}


def test_stop_with_nothing_running_is_a_409(owner_api):
    agent = create(owner_api)

    error = assert_error(post_json(owner_api, f"{URL}/{agent['id']}/stop"), 409, "CONFLICT")

    assert error["details"]["status"] == "ready"


@pytest.mark.dialect
def test_restart_after_a_stop_starts_attempt_two_with_the_changes_sent(owner_api):
    agent = create(owner_api, "Echo a.")
    start(owner_api, agent["id"])
    post_json(owner_api, f"{URL}/{agent['id']}/stop")

    response = post_json(
        owner_api, f"{URL}/{agent['id']}/restart", {"contract": "Echo b.", "max_turns": 2}
    )

    assert response.status_code == 201
    body = response.json()
    assert (body["status"], body["contract"], body["attempt"]["number"]) == (
        "running",
        "Echo b.",
        2,
    )
    assert body["attempt"]["budgets"]["max_turns"] == 2
    second = Run.objects.get(pk=body["attempt"]["run_id"])
    assert second.task.text == "Echo b."
    assert ConversationEntry.objects.get(conversation=second.conversation).text == "Echo b."


def test_restart_with_an_empty_body_changes_nothing(owner_api):
    agent = create(owner_api, "Echo a.")
    start(owner_api, agent["id"])
    post_json(owner_api, f"{URL}/{agent['id']}/stop")

    body = post_json(owner_api, f"{URL}/{agent['id']}/restart").json()

    assert (body["contract"], body["attempt"]["number"]) == ("Echo a.", 2)


@pytest.mark.dialect
def test_restart_while_running_or_never_started_is_a_409_and_changes_nothing(owner_api):
    agent = create(owner_api, "Echo a.")
    restart = f"{URL}/{agent['id']}/restart"

    never = assert_error(post_json(owner_api, restart, {"contract": "x"}), 409, "CONFLICT")
    start(owner_api, agent["id"])
    running = assert_error(post_json(owner_api, restart, {"contract": "x"}), 409, "CONFLICT")

    assert (never["details"]["status"], running["details"]["status"]) == ("ready", "running")
    assert ContractAgent.objects.get().contract == "Echo a."
    assert Run.objects.count() == 1


def test_restart_while_the_kill_switch_is_engaged_is_a_503_and_changes_nothing(owner_api):
    agent = create(owner_api, "Echo a.")
    start(owner_api, agent["id"])
    post_json(owner_api, f"{URL}/{agent['id']}/stop")
    KillSwitch.objects.update_or_create(pk=1, defaults={"engaged": True, "reason": "drill"})

    response = post_json(owner_api, f"{URL}/{agent['id']}/restart", {"contract": "Echo b."})

    assert_error(response, 503, "SERVICE_UNAVAILABLE")
    assert ContractAgent.objects.get().contract == "Echo a."
    assert Run.objects.count() == 1


def test_a_bad_restart_body_is_a_400_and_starts_nothing(owner_api):
    agent = create(owner_api)
    start(owner_api, agent["id"])
    post_json(owner_api, f"{URL}/{agent['id']}/stop")

    response = post_json(owner_api, f"{URL}/{agent['id']}/restart", {"max_turns": -1})

    assert fields(assert_error(response, 400, "VALIDATION_ERROR")) == ["max_turns"]
    assert Run.objects.count() == 1


@pytest.mark.dialect
def test_change_sets_only_the_fields_sent_and_null_budgets_follow_the_defaults(owner_api):
    agent = create(owner_api, "Echo a.", name="Old", max_turns=3, max_tokens=500)

    body = patch_json(
        owner_api,
        f"{URL}/{agent['id']}",
        {"name": "New", "max_turns": None, "max_seconds": 90, "is_open": False},
    ).json()

    assert (body["name"], body["contract"], body["is_open"]) == ("New", "Echo a.", False)
    assert body["budgets"]["max_turns"] == 20 and body["budgets"]["max_seconds"] == 90
    assert body["budgets"]["max_tokens"] == 500
    assert body["budgets"]["defaults"] == ["max_turns"]


@pytest.mark.dialect
def test_the_contract_cannot_change_while_running_but_the_name_can(owner_api):
    agent = create(owner_api, "Echo a.")
    start(owner_api, agent["id"])

    refused = patch_json(owner_api, f"{URL}/{agent['id']}", {"contract": "Echo b."})
    renamed = patch_json(owner_api, f"{URL}/{agent['id']}", {"name": "Echoer"})

    assert_error(refused, 409, "CONFLICT")
    assert renamed.status_code == 200
    assert (ContractAgent.objects.get().contract, renamed.json()["name"]) == ("Echo a.", "Echoer")


@pytest.mark.parametrize(
    "body, field",
    [
        ({"max_tokens": 0}, "max_tokens"),
        ({"contract": ""}, "contract"),
        ({"is_open": "no"}, "is_open"),
        ({"owner": 2}, "owner"),
    ],
)
def test_a_bad_change_is_a_400_naming_the_field(owner_api, body, field):
    agent = create(owner_api, "Echo a.")

    error = assert_error(
        patch_json(owner_api, f"{URL}/{agent['id']}", body), 400, "VALIDATION_ERROR"
    )

    assert field in fields(error)[0]
    assert ContractAgent.objects.get().contract == "Echo a."


@pytest.mark.dialect
def test_attempts_are_listed_newest_first_and_paged(owner_api):
    agent = create(owner_api)
    for _ in range(3):
        start(owner_api, agent["id"])
        post_json(owner_api, f"{URL}/{agent['id']}/stop")

    body = owner_api.get(f"{URL}/{agent['id']}/attempts").json()
    page_two = owner_api.get(f"{URL}/{agent['id']}/attempts?page=2&page_size=2").json()

    assert body["count"] == 3
    assert [(a["number"], a["outcome"]) for a in body["results"]] == [
        (3, "stopped"),
        (2, "stopped"),
        (1, "stopped"),
    ]
    assert [a["number"] for a in page_two["results"]] == [1]


@pytest.mark.django_db(transaction=True)
def test_a_completed_attempt_is_read_as_status_attempts_entries_and_its_log_file(owner_api, logs):
    agent = create(owner_api, "Echo a.", name="Echo agent")
    run_id = start(owner_api, agent["id"]).json()["attempt"]["run_id"]
    assert run_to_completion(run_id).status == "succeeded"

    status = owner_api.get(f"{URL}/{agent['id']}").json()
    attempts = owner_api.get(f"{URL}/{agent['id']}/attempts").json()["results"]
    entries = owner_api.get(f"{URL}/{agent['id']}/attempts/1/entries?after=1").json()
    response = owner_api.get(f"{URL}/{agent['id']}/attempts/1/log")

    assert (status["status"], status["reason"]) == ("completed", "a was echoed")
    assert status["attempt"]["cycles"] == 1 and status["attempt"]["tokens_used"] > 0
    assert status["attempt"]["finished_at"] is not None
    assert [(a["number"], a["status"], a["outcome"]) for a in attempts] == [
        (1, "succeeded", "completed")
    ]
    assert [e["kind"] for e in entries["entries"]] == ["assistant", "tool_call", "tool_result"]
    assert entries["entries"][0]["text"] == "Echoing a."
    assert (entries["running_answer"], entries["has_more"]) == (None, False)
    name = log_path(Run.objects.get(pk=run_id)).name
    assert name.startswith(f"echo-agent-{agent['id']}-attempt-1-")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Content-Disposition"] == f'attachment; filename="{name}"'
    assert not response.has_header("X-Log-Write-Error")
    text = response.content.decode()
    assert "[contract] Echo a." in text and '[tool] echo {"text": "a"}' in text
    assert "[evaluation] contract met: a was echoed" in text
    assert (logs / name).read_text() == text
    latest = owner_api.get(f"{URL}/{agent['id']}/log")
    assert (latest.content, latest["Content-Disposition"]) == (
        response.content,
        response["Content-Disposition"],
    )


@pytest.mark.django_db(transaction=True)
def test_an_attempts_output_streams_on_its_conversations_socket_for_its_owner_only(
    owner_api, owner, outsider, api_key_for
):
    agent = create(owner_api, "Echo a.")
    attempt = start(owner_api, agent["id"]).json()["attempt"]
    run_to_completion(attempt["run_id"])
    entries = owner_api.get(f"{URL}/{agent['id']}/attempts/1/entries").json()["entries"]

    async def follow(auth):
        socket = api_socket(attempt["conversation_id"], auth)
        assert (await socket.connect())[0]
        messages = await receive_until(socket, idle)
        await socket.disconnect()
        return messages

    async def refused(auth):
        return await refusal(api_socket(attempt["conversation_id"], auth))

    sent = rows_sent(of_type(async_to_sync(follow)(api_key_for(owner)), "entry"))
    assert sent == [(e["seq"], e["kind"], e["text"]) for e in entries]
    assert async_to_sync(refused)(api_key_for(outsider)) == 4403


@pytest.mark.django_db(transaction=True)
def test_a_deleted_log_file_is_written_again_from_the_rows(owner_api, logs):
    agent = create(owner_api)
    run = run_to_completion(start(owner_api, agent["id"]).json()["attempt"]["run_id"])
    written = log_path(run).read_text()
    log_path(run).unlink()

    response = owner_api.get(f"{URL}/{agent['id']}/log")

    assert response.content.decode() == written == log_path(run).read_text()


@pytest.mark.django_db(transaction=True)
def test_a_log_that_cannot_be_written_is_served_from_the_rows_with_the_reason(
    owner_api, settings, tmp_path
):
    agent = create(owner_api)
    run = run_to_completion(start(owner_api, agent["id"]).json()["attempt"]["run_id"])
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the log directory should be")
    settings.AGENT_LOG_DIR = blocker

    response = owner_api.get(f"{URL}/{agent['id']}/log")

    assert response.status_code == 200
    assert "[evaluation] contract met: a was echoed" in response.content.decode()
    assert response["X-Log-Write-Error"].startswith(("FileExistsError", "NotADirectoryError"))
    assert response["Content-Disposition"] == f'attachment; filename="{log_path(run).name}"'


def test_a_running_attempts_log_is_rendered_and_its_file_left_to_the_worker(owner_api, logs):
    agent = create(owner_api, "Echo a.")
    start(owner_api, agent["id"])

    response = owner_api.get(f"{URL}/{agent['id']}/log")

    assert response.status_code == 200
    assert "[contract] Echo a." in response.content.decode()
    assert not logs.exists()


def test_an_agent_never_started_has_no_log_and_no_attempt_one(owner_api):
    agent = create(owner_api)

    for path in ("log", "attempts/1/log", "attempts/1/entries"):
        assert_error(owner_api.get(f"{URL}/{agent['id']}/{path}"), 404, "NOT_FOUND")


@pytest.mark.parametrize(
    "path, status, code",
    [
        ("attempts/0/log", 400, "VALIDATION_ERROR"),
        (f"attempts/{2**70}/entries", 400, "VALIDATION_ERROR"),
        ("attempts/1/entries?after=-1", 400, "VALIDATION_ERROR"),
        ("attempts?page=0", 400, "VALIDATION_ERROR"),
        ("attempts/x/log", 404, "NOT_FOUND"),
        ("attempts/2/log", 404, "NOT_FOUND"),
    ],
)
def test_a_bad_or_missing_attempt_number_is_refused_in_the_envelope(owner_api, path, status, code):
    agent = create(owner_api)
    start(owner_api, agent["id"])

    assert_error(owner_api.get(f"{URL}/{agent['id']}/{path}"), status, code)


@pytest.mark.parametrize(
    "method, path, body",
    [
        ("get", "", None),
        ("patch", "", {"name": "mine now"}),
        ("post", "/start", None),
        ("post", "/stop", None),
        ("post", "/restart", {}),
        ("get", "/attempts", None),
        ("get", "/attempts/1/entries", None),
        ("get", "/attempts/1/log", None),
        ("get", "/log", None),
    ],
)
def test_another_users_agent_is_a_404_everywhere_and_nothing_changes(
    owner_api, outsider_api, method, path, body
):
    agent = create(owner_api, name="secret")
    start(owner_api, agent["id"])
    post_json(owner_api, f"{URL}/{agent['id']}/stop")
    url = f"{URL}/{agent['id']}{path}"

    if method == "get":
        response = outsider_api.get(url)
    elif method == "patch":
        response = patch_json(outsider_api, url, body)
    else:
        response = post_json(outsider_api, url, body)

    assert assert_error(response, 404, "NOT_FOUND")["details"] == {"agent_id": agent["id"]}
    assert outsider_api.get(URL).json()["count"] == 0
    assert ContractAgent.objects.get().name == "secret"
    assert list(Run.objects.values_list("status", flat=True)) == ["cancelled"]
