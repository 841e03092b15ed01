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
from tests.support.tools import make_registry

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
