"""Contract agents on a real Celery worker with the scripted LLM server, driven and read over
REST as a mobile client does: one started, completed by its own evaluation, then read (status,
attempts, output, log file); and two at the same time on two workers."""

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agents_app.models import Run
from tests.support.api import post_json
from tests.support.script import json_reply, tool_call
from tests.support.waiting import wait_for_run

pytestmark = pytest.mark.integration

URL = "/api/v1/agents"


@pytest.fixture(scope="module")
def module_worker_env(tmp_path_factory) -> dict[str, str]:
    return {"AGENT_LOG_DIR": str(tmp_path_factory.mktemp("agent-logs"))}


@pytest.fixture
def logs(settings, module_worker_env) -> Path:
    """The directory the worker writes attempt logs to, and this process too."""
    settings.AGENT_LOG_DIR = Path(module_worker_env["AGENT_LOG_DIR"])
    return settings.AGENT_LOG_DIR


def evaluation(met: bool, reason: str, *evidence: int) -> dict:
    return json_reply({"met": met, "reason": reason, "evidence": list(evidence)})


def started(client, contract: str) -> tuple[int, int]:
    """A new agent, started over REST: (agent id, its attempt's run id)."""
    agent = post_json(client, URL, {"contract": contract}).json()
    response = post_json(client, f"{URL}/{agent['id']}/start")
    assert response.status_code == 201, response.content
    return agent["id"], response.json()["attempt"]["run_id"]


def test_an_agent_started_over_rest_completes_on_a_worker_and_is_read_over_rest(
    llm, shared_worker, owner_api, logs
):
    llm.script(
        [
            {
                "match": "AGENTDESK:EVALUATE",
                "replies": [
                    evaluation(False, "apple.txt is written but not checked"),
                    evaluation(True, "apple.txt holds apple", 1, 2),
                ],
            },
            {
                "match": "AGENTDESK:CONTRACT",
                "replies": [
                    {
                        **tool_call("write_file", path="apple.txt", content="apple\n"),
                        "content": "Writing apple.txt.",
                    },
                    tool_call("read_file", path="apple.txt"),
                ],
            },
        ]
    )
    agent_id, run_id = started(owner_api, "apple.txt holds the word apple; check it.")

    run = wait_for_run(run_id)
    assert run.status == "succeeded", (run.error_code, run.error_message)
    status = owner_api.get(f"{URL}/{agent_id}").json()
    attempts = owner_api.get(f"{URL}/{agent_id}/attempts").json()
    entries = owner_api.get(f"{URL}/{agent_id}/attempts/1/entries?after=0").json()
    on_disk = (logs / status["attempt"]["log_name"]).read_text()  # written by the worker
    response = owner_api.get(f"{URL}/{agent_id}/log")

    assert (status["status"], status["reason"]) == ("completed", "apple.txt holds apple")
    assert status["attempt"]["cycles"] == 2 and status["attempt"]["tokens_used"] > 0
    assert [(a["number"], a["outcome"]) for a in attempts["results"]] == [(1, "completed")]
    assert [e["kind"] for e in entries["entries"]] == [
        "user",
        "assistant",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
    ]
    assert entries["entries"][-1]["text"].count("apple") >= 1
    assert entries["running_answer"] is None
    text = response.content.decode()
    assert response["Content-Disposition"].endswith(f'filename="{status["attempt"]["log_name"]}"')
    assert text == on_disk
    assert "[evaluation] contract not met: apple.txt is written but not checked" in text
    assert "[evaluation] contract met: apple.txt holds apple" in text
    assert text.index("[tool] write_file") < text.index("[tool] read_file")


def test_two_agents_run_at_the_same_time_on_two_workers(llm, start_worker, owner_api, logs):
    both_asked = threading.Barrier(2, timeout=30)

    def together(body):
        # Each agent's first request waits for the other's: only two attempts in flight at
        # once pass (a worker busy with one agent would leave the other unasked).
        try:
            both_asked.wait()
        except threading.BrokenBarrierError:
            return {"content": "alone"}
        return {"content": "together"}

    llm.script(
        [
            {"match": ["AGENTDESK:EVALUATE", "Say one"], "replies": [evaluation(True, "said one")]},
            {"match": ["AGENTDESK:EVALUATE", "Say two"], "replies": [evaluation(True, "said two")]},
            {"match": "AGENTDESK:CONTRACT", "replies": [together, together]},
        ]
    )
    with ThreadPoolExecutor(2) as pool:  # both start at once: half the wait
        list(pool.map(lambda name: start_worker(name, AGENT_LOG_DIR=str(logs)), ["w1", "w2"]))
    first, first_run = started(owner_api, "Say one.")
    second, second_run = started(owner_api, "Say two.")

    runs = [wait_for_run(first_run), wait_for_run(second_run)]

    assert [r.status for r in runs] == ["succeeded", "succeeded"]
    listed = owner_api.get(URL).json()["results"]
    assert {a["id"]: (a["status"], a["reason"]) for a in listed} == {
        first: ("completed", "said one"),
        second: ("completed", "said two"),
    }
    for agent_id in (first, second):
        assert "[agent] together" in owner_api.get(f"{URL}/{agent_id}/log").content.decode()
    assert Run.objects.filter(kind="contract").count() == 2
