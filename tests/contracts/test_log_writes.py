"""A contract attempt's log file is written once after each cycle that goes on and once at the
attempt's end, never twice in one transaction."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents_app.contracts.services import agent_create, agent_start
from agents_app.worker.execution import execute_run
from tests.support.script import json_reply, tool_call
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import EchoTool, make_registry

pytestmark = pytest.mark.django_db(transaction=True)


def renders(captured, run):
    """How many times the attempt's log was rendered: each render reads what the agent and
    the person said (contracts.logs.render_log), a query nothing else makes."""
    return sum(
        1
        for q in captured.captured_queries
        if "agents_app_conversationentry" in q["sql"]
        and '"kind" IN' in q["sql"]
        and f'"conversation_id" = {run.conversation_id}' in q["sql"]
    )


@pytest.mark.dialect
def test_the_log_is_written_once_per_cycle_and_once_at_the_end(owner, llm, settings, tmp_path):
    settings.AGENT_LOG_DIR = tmp_path / "logs"
    agent = agent_create(owner=owner, interface="api", contract="Echo a then b.")
    run = agent_start(agent=agent, actor=owner, interface="api")
    provider = ScriptedProvider(
        [
            {
                "match": "AGENTDESK:EVALUATE",
                "replies": [
                    json_reply({"met": False, "reason": "b is not echoed yet", "evidence": []}),
                    json_reply({"met": True, "reason": "both echoed", "evidence": [1, 2]}),
                ],
            },
            {
                "match": "AGENTDESK:CONTRACT",
                "replies": [tool_call("echo", text="a"), tool_call("echo", text="b")],
            },
        ]
    )

    with CaptureQueriesContext(connection) as captured:
        execute_run(run.pk, provider=provider, registry=make_registry(EchoTool()))

    run.refresh_from_db()
    assert (run.status, run.replans) == ("succeeded", 1)
    # The first cycle went on (one write), the second ended the attempt (one write).
    assert renders(captured, run) == 2
