"""A chat with the real small model (SmolLM2 on the embedded llama.cpp server): the answers
of a real model land in the transcript, the second answer is given the first exchange, and
whatever the model does, no call is left without its result. In-process (no Celery): what
matters here is how a real model's output is handled, not the worker. A call the model makes
that waits for a person is denied, and the turn goes on."""

import pytest

from agents_app.approvals.decisions import approval_decide
from agents_app.conversations.selectors import transcript
from agents_app.conversations.services import conversation_create, message_post
from agents_app.conversations.transcript import chat_messages
from agents_app.engine.openai_provider import OpenAICompatibleProvider
from agents_app.models import Approval, ApprovalStatus, Decision, Run, RunStatus
from agents_app.worker.execution import execute_run
from tools_app.process_registry import get_registry

pytestmark = [pytest.mark.local_model, pytest.mark.django_db(transaction=True)]

# How many times a turn may stop for an approval before the test gives up on it.
ASKS = 5


def answer(run: Run, provider: OpenAICompatibleProvider, owner) -> Run:
    """Execute the turn until it ends. The model may call a tool that waits for a person
    (a clean-clone run saw SmolLM2 write one): each such call is denied, as a person may,
    and the turn goes on without it."""
    for _ in range(ASKS):
        execute_run(run.pk, provider=provider, registry=get_registry())
        run.refresh_from_db()
        pending = Approval.objects.filter(run=run, status=ApprovalStatus.PENDING)
        if run.status != RunStatus.WAITING_APPROVAL or not pending.exists():
            return run
        for approval in pending:
            approval_decide(
                approval_id=approval.pk, decision=Decision.DENY, actor=owner, interface="web"
            )
    return run


def test_a_two_turn_chat_with_the_real_model(local_model, owner, llm, settings):
    settings.LLM_MAX_TOKENS_STEP = 64
    provider = OpenAICompatibleProvider(
        base_url=local_model.base_url, api_key="", model=local_model.model, max_retries=0
    )
    chat = conversation_create(owner=owner, interface="web")
    try:
        for text in ("My name is Ada. Say hello to me.", "What is my name?"):
            _, run = message_post(conversation=chat, actor=owner, interface="web", text=text)
            run = answer(run, provider, owner)
            assert run.status in ("succeeded", "failed"), run.status
            assert run.status == "succeeded" or run.error_code, run.error_message
    finally:
        provider.close()

    rows = transcript(chat)
    answers = [e for e in rows if e.kind == "assistant"]
    assert answers and all(e.text.strip() for e in answers), (
        [(e.kind, e.text) for e in rows],
        local_model.log()[-2000:],
    )
    # The second answer was asked with the whole first exchange before the new message.
    last = run
    sent = chat_messages(last)
    assert [m["role"] for m in sent][:2] == ["system", "user"]
    assert sent[1]["content"] == "My name is Ada. Say hello to me."
    assert [m["content"] for m in sent if m["role"] == "user"][-1] == "What is my name?"
    calls = [c["id"] for m in sent if m["role"] == "assistant" for c in m.get("tool_calls") or ()]
    results = [m["tool_call_id"] for m in sent if m["role"] == "tool"]
    assert sorted(calls) == sorted(results)
