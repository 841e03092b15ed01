"""A chat answer stopped while a call waits for a person keeps what it did (issue 32, finding
3): the model called a tool that asks, the person denied it, the model asked again, the person
pressed Stop. Every call it made is in the transcript with its result, over REST after the
stop as it was live."""

import pytest

from agents_app.approvals.decisions import approval_decide
from agents_app.conversations.services import conversation_create, message_post
from agents_app.models import Approval, ApprovalStatus, Decision, Run, ToolCall
from agents_app.worker.execution import execute_run
from tests.support.tools import SendTool, make_registry

from .test_chat_answers import SnapshotProvider

pytestmark = pytest.mark.django_db(transaction=True)

SEND = {"name": "send", "arguments": {"to": "ada", "text": "hi"}}


def decide_pending(run, owner, decision):
    [approval] = Approval.objects.filter(run=run, status=ApprovalStatus.PENDING)
    approval_decide(approval_id=approval.pk, decision=decision, actor=owner, interface="web")


def test_an_answer_stopped_at_its_second_approval_keeps_both_calls_after_a_reload(
    owner, owner_api, llm
):
    provider = SnapshotProvider(
        [{"match": "AGENTDESK:CHAT", "replies": [{"tool_calls": [SEND]}, {"tool_calls": [SEND]}]}]
    )
    registry = make_registry(SendTool())
    chat = conversation_create(owner=owner, interface="web")
    _, run = message_post(conversation=chat, actor=owner, interface="web", text="Greet Ada")

    execute_run(run.pk, provider=provider, registry=registry)
    decide_pending(run, owner, Decision.DENY)
    execute_run(run.pk, provider=provider, registry=registry)  # the model asks again
    assert Run.objects.get(pk=run.pk).status == "waiting_approval"
    stopped = owner_api.post(f"/api/v1/conversations/{chat.pk}/stop")
    assert stopped.status_code == 200, stopped.content
    assert stopped.json()["stopped_run_id"] == run.pk

    entries = owner_api.get(f"/api/v1/conversations/{chat.pk}/entries").json()["entries"]
    shown = [(e["kind"], e["data"].get("wire_name", e["text"])) for e in entries]
    assert shown == [
        ("user", "Greet Ada"),
        ("tool_call", "send"),
        ("tool_result", "send"),
        ("tool_call", "send"),
        ("tool_result", "send"),
    ]
    first, second = (e for e in entries if e["kind"] == "tool_result")
    assert "denied" in first["text"].lower()
    assert "stopped" in second["text"].lower() and second["data"]["ok"] is False
    calls = [e["data"]["call_id"] for e in entries if e["kind"] == "tool_call"]
    assert [e["data"]["call_id"] for e in (first, second)] == calls
    # As the run's own rows say: one denied, one skipped.
    assert sorted(ToolCall.objects.filter(run=run).values_list("status", flat=True)) == [
        "denied",
        "skipped",
    ]
