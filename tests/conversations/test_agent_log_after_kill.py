"""A contract agent's log file is rendered from the attempt's rows, so a worker killed with
SIGKILL mid-attempt loses nothing of it: the worker that takes the attempt over writes the
whole log, both workers' parts included. Real Celery workers, Redis and the scripted LLM."""

import json

import pytest

from agents_app.contracts.logs import log_path
from agents_app.contracts.services import agent_create, agent_start
from tests.support.script import asked, json_reply
from tests.support.waiting import wait_for, wait_for_run

pytestmark = pytest.mark.integration


def write(line):
    return {
        "tool_calls": [
            {
                "name": "write_file",
                "arguments": {"path": "log.txt", "content": line + "\n", "append": True},
            }
        ]
    }


@pytest.mark.slow(reason="two workers start; one is killed mid-attempt and the other takes over")
def test_a_worker_killed_mid_attempt_leaves_a_complete_log(
    llm, start_worker, owner, settings, tmp_path
):
    logs = tmp_path / "agent-logs"
    settings.AGENT_LOG_DIR = logs
    llm.script(
        [
            {
                "match": "AGENTDESK:EVALUATE",
                "replies": [
                    json_reply({"met": False, "reason": "b is missing", "evidence": []}),
                    json_reply({"met": True, "reason": "a and b are written", "evidence": [1, 2]}),
                ],
            },
            {
                "match": "The contract is not met yet",
                # The first attempt at cycle 2 hangs until its worker is killed.
                "replies": [{"delay": 60, "content": "too late"}, write("b")],
            },
            {"match": "AGENTDESK:CONTRACT", "replies": [write("a")]},
        ]
    )
    first = start_worker("first", AGENT_LOG_DIR=str(logs))
    agent = agent_create(owner=owner, interface="api", contract="Write a, then b, to log.txt.")
    run = agent_start(agent=agent, actor=owner, interface="api")
    wait_for(lambda: asked(llm, "The contract is not met yet"), message="cycle 2's request")
    written_before = log_path(run).read_text()
    assert "[evaluation] contract not met: b is missing" in written_before
    first.kill()
    start_worker("second", AGENT_LOG_DIR=str(logs), CELERY_VISIBILITY_TIMEOUT="4")
    run = wait_for_run(run.pk, timeout=90)

    assert run.status == "succeeded", (run.error_code, run.error_message)
    log = log_path(run).read_text()
    lines = log.splitlines()
    assert log.startswith(written_before.rstrip("\n").split("\n")[0])
    for expected in (
        "[contract] Write a, then b, to log.txt.",
        '[tool] write_file {"append": true, "content": "a\\n", "path": "log.txt"}',
        "[evaluation] contract not met: b is missing",
        '[tool] write_file {"append": true, "content": "b\\n", "path": "log.txt"}',
        "[evaluation] contract met: a and b are written",
        "[end] Completed: a and b are written",
    ):
        assert any(line.endswith(expected) for line in lines), (expected, log)
    # Cycle 2 began on the killed worker and again on the second: both are in the log.
    assert sum(line.endswith("cycle 2 started") for line in lines) == 1
    assert (
        sum(
            line.endswith("cycle 2 started again after an interruption (attempt 2)")
            for line in lines
        )
        == 1
    )
    results = [json.loads(line.split(" [result] ")[1]) for line in lines if " [result] " in line]
    assert len(results) == 2 and all(r["path"] == "log.txt" for r in results)
