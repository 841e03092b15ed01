"""A chat answer's end does only what its kind needs: it has no children, so it asks nothing
about them (its recipe's end answers the next message; only a kind that delegates looks for
children to cancel)."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents_app.conversations.services import conversation_create, message_post
from agents_app.worker.execution import execute_run
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import EchoTool, make_registry

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.dialect
def test_a_chat_answers_end_runs_no_query_about_children(owner, llm):
    chat = conversation_create(owner=owner, interface="api")
    _, run = message_post(conversation=chat, actor=owner, interface="api", text="Say hi")
    provider = ScriptedProvider([{"match": "AGENTDESK:CHAT", "replies": [{"content": "hi"}]}])

    with CaptureQueriesContext(connection) as captured:
        execute_run(run.pk, provider=provider, registry=make_registry())

    run.refresh_from_db()
    assert run.status == "succeeded"
    children = re.compile(rf'"parent_id" = {run.pk}\b')
    about_children = [q["sql"] for q in captured.captured_queries if children.search(q["sql"])]
    assert about_children == []


def transactions(queries: list[dict]) -> list[list[str]]:
    """The statements of each transaction, BEGIN to COMMIT (SQLite writes both down)."""
    found, current = [], None
    for sql in (q["sql"] for q in queries):
        if sql.startswith("BEGIN"):
            current = []
        elif sql == "COMMIT" and current is not None:
            found.append(current)
            current = None
        elif current is not None:
            current.append(sql)
    return found


def test_a_chat_answers_step_end_locks_the_runs_row_before_it_writes_the_transcript(owner, llm):
    # The answer joins the transcript in the step's end, which reads the run's row: that row is
    # read (locked) first, as in every unfenced commit, before the conversation's row is taken.
    chat = conversation_create(owner=owner, interface="api")
    _, run = message_post(conversation=chat, actor=owner, interface="api", text="Say hi")
    provider = ScriptedProvider([{"match": "AGENTDESK:CHAT", "replies": [{"content": "hi"}]}])

    with CaptureQueriesContext(connection) as captured:
        execute_run(run.pk, provider=provider, registry=make_registry())

    answer = re.compile(r'INSERT INTO "agents_app_conversationentry".*\'assistant\', \'hi\'')
    (step_end,) = [t for t in transactions(captured.captured_queries) if any(map(answer.search, t))]
    assert step_end[0].startswith('SELECT "agents_app_run"."id"')
    assert re.search(rf'WHERE "agents_app_run"."id" = {run.pk}\b', step_end[0])


def test_an_answer_that_fails_locks_the_runs_row_before_it_keeps_its_calls(owner, llm):
    # A step that did not complete gets no verdict in its end, but its calls still join the
    # transcript there: the run's row is locked first all the same (the recipe's `transcript`).
    chat = conversation_create(owner=owner, interface="api")
    _, run = message_post(conversation=chat, actor=owner, interface="api", text="echo, ramble")
    too_long = {"content": "Lorem ipsum", "finish_reason": "length"}
    call = {"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]}
    provider = ScriptedProvider(
        [{"match": "AGENTDESK:CHAT", "replies": [call, too_long, too_long]}]
    )

    with CaptureQueriesContext(connection) as captured:
        execute_run(run.pk, provider=provider, registry=make_registry(EchoTool()))

    run.refresh_from_db()
    assert (run.status, run.error_code) == ("failed", "ANSWER_TOO_LONG")
    kept = re.compile(r'INSERT INTO "agents_app_conversationentry".*\'tool_result\'')
    (step_end,) = [t for t in transactions(captured.captured_queries) if any(map(kept.search, t))]
    assert step_end[0].startswith('SELECT "agents_app_run"."id"')
