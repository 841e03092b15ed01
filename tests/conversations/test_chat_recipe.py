"""What the chat answer's recipe (conversations.recipe) decides, seen on a chat: an answer is
no task with files to show, so a message naming a file is answered without one."""

import pytest

from agents_app.conversations.services import conversation_create, message_post
from agents_app.worker.execution import execute_run
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import make_registry

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_message_naming_a_file_is_answered_without_the_file(owner, llm):
    chat = conversation_create(owner=owner, interface="api")
    _, run = message_post(
        conversation=chat,
        actor=owner,
        interface="api",
        text="How would I write hello to hello.txt?",
    )
    provider = ScriptedProvider(
        [{"match": "AGENTDESK:CHAT", "replies": [{"content": "Use echo hello > hello.txt"}]}]
    )

    execute_run(run.pk, provider=provider, registry=make_registry())

    run.refresh_from_db()
    assert (run.status, run.final_response) == ("succeeded", "Use echo hello > hello.txt")
