"""Every form a server gives its reasoning in (seed 002: `message.reasoning`,
`reasoning_content`, `<think>`, `<thinking>`) reaches a chat as a reasoning row, never as part
of the answer. Over the wire: the scripted OpenAI-compatible server and AgentDesk's provider,
streaming."""

import pytest

from agents_app.conversations.selectors import transcript
from agents_app.conversations.services import conversation_create, message_post
from agents_app.engine.openai_provider import (
    OpenAICompatibleProvider,
    forget_endpoint_features,
)
from agents_app.worker.execution import execute_run
from tests.support.tools import make_registry

pytestmark = pytest.mark.django_db(transaction=True)

FORMS = {
    "reasoning_content": {"reasoning": "Weighing it up.", "content": "Answer one."},
    "reasoning": {
        "reasoning": "Weighing it up.",
        "reasoning_field": "reasoning",
        "content": "Answer two.",
    },
    "think": {"chunks": ["<thi", "nk>Weighing", " it up.</th", "ink>\n\nAnswer three."]},
    "thinking": {"chunks": ["<thinking>Weighing it up.</thinking>", "Answer four."]},
}


@pytest.mark.parametrize("form", FORMS)
def test_each_form_of_reasoning_is_kept_apart_from_the_answer(form, owner, llm):
    llm.script([{"match": "AGENTDESK:CHAT", "replies": [FORMS[form]]}])
    provider = OpenAICompatibleProvider(
        base_url=llm.base_url, api_key="", model="scripted", max_retries=0
    )
    chat = conversation_create(owner=owner, interface="web")
    _, run = message_post(conversation=chat, actor=owner, interface="web", text="Think first.")
    try:
        execute_run(run.pk, provider=provider, registry=make_registry())
    finally:
        provider.close()
        forget_endpoint_features()  # what it learnt of the shared server stays with this test
    rows = [(e.kind, e.text) for e in transcript(chat)]
    answer = rows[-1][1]
    assert rows[:2] == [("user", "Think first."), ("reasoning", "Weighing it up.")], rows
    assert rows[-1][0] == "assistant" and answer.startswith("Answer ")
    assert "Weighing" not in answer and "<" not in answer
