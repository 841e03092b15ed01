"""A contract agent's Stop while its model's answer streams, over the wire in this process:
the worker's poll reads the stop between two chunks and lets the answer in flight finish
(seed 002), where a task's or a chat's poll would cut it; after Stop now, it cuts it too."""

import pytest
from django.db import connection

from agents_app.contracts.services import agent_create, agent_start, agent_stop
from agents_app.conversations.selectors import transcript
from agents_app.worker.execution import execute_run
from agents_app.worker.hooks import POLL_SECONDS
from tests.support.tools import EchoTool, make_registry

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_stop_the_poll_reads_mid_answer_lets_the_answer_finish(owner, llm, settings, tmp_path):
    settings.AGENT_LOG_DIR = tmp_path / "logs"
    agent = agent_create(owner=owner, interface="api", contract="Echo a.")
    run = agent_start(agent=agent, actor=owner, interface="api")

    def stop_then_answer(body):
        # In the server's thread: the person presses Stop once the request is in flight.
        agent_stop(agent=agent, actor=owner, interface="api")
        connection.close()
        # Each chunk comes more than a poll interval after the last, so the worker's poll
        # reads the run's flags between two of them and sees the stop mid-answer.
        return {
            "chunks": ["Here is ", "my answer."],
            "chunk_delay": POLL_SECONDS + 0.05,
        }

    llm.script([{"match": "AGENTDESK:CONTRACT", "replies": [stop_then_answer]}])

    execute_run(run.pk, registry=make_registry(EchoTool()))

    run.refresh_from_db()
    assert run.status == "cancelled" and len(llm.requests) == 1
    rows = [(e.kind, e.text) for e in transcript(run.conversation) if e.kind != "tool_call"]
    assert rows == [
        ("user", "Echo a."),
        ("assistant", "Here is my answer."),
    ]


def test_stop_now_the_poll_reads_mid_answer_cuts_the_answer_and_keeps_what_came(
    owner, llm, settings, tmp_path
):
    settings.AGENT_LOG_DIR = tmp_path / "logs"
    agent = agent_create(owner=owner, interface="api", contract="Echo a.")
    run = agent_start(agent=agent, actor=owner, interface="api")

    def stop_now():
        # Stop, then Stop now, once the first piece was sent: the next poll cuts the stream.
        # (Pressed when the request came, a poll after the stream's first, empty chunk could
        # cut it before anything came: on a busy machine it did.)
        agent_stop(agent=agent, actor=owner, interface="api")
        agent_stop(agent=agent, actor=owner, interface="api", now=True)
        connection.close()

    def stop_now_then_answer(body):
        return {
            "chunks": ["Here is ", "my answer ", "at last."],
            "chunk_delay": POLL_SECONDS + 0.05,
            "before_chunk": {1: stop_now},
        }

    llm.script([{"match": "AGENTDESK:CONTRACT", "replies": [stop_now_then_answer]}])

    execute_run(run.pk, registry=make_registry(EchoTool()))

    run.refresh_from_db()
    assert run.status == "cancelled" and len(llm.requests) == 1
    (said,) = [e.text for e in transcript(run.conversation) if e.kind == "assistant"]
    assert said.endswith("…[stopped]") and "at last." not in said
