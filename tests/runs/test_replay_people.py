"""A replay does what people did in its source as they did it (issue 36, item 4): an approval
approved or denied, a plan edited, is decided so again (their decision, applied by the worker)
without waiting for anyone; a run stopped is stopped at the same point."""

from dataclasses import replace

import pytest

from agents_app.approvals.decisions import approval_decide
from agents_app.models import Approval, AuditEvent, AuditInterface, Run, Task
from agents_app.runs.services import run_cancel, run_create
from agents_app.worker.execution import execute_run
from tests.support.replays import decided, divergences, no_model, notes_script, replayed
from tests.support.runs import make_run
from tests.support.script import plan_reply, step, tool_call, verdict
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import SendTool, make_registry
from tests.support.workspaces import own_workspaces
from tools_app.process_registry import get_registry

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("own_workspaces")]
__all__ = ["own_workspaces"]


def outcome(run: Run) -> tuple:
    calls = list(run.tool_calls.order_by("id").values_list("tool", "status", "result"))
    return run.status, run.final_response, calls


@pytest.mark.dialect
@pytest.mark.parametrize("decision", ["approve", "deny"])
def test_an_approval_is_decided_as_it_was_by_the_worker(owner, monkeypatch, decision):
    source = decided(owner, decision)
    assert source.is_terminal, (source.status, source.error_message)
    no_model(monkeypatch)

    replay = replayed(source)

    assert divergences(replay) == [], divergences(replay)[0]["diff"]
    assert outcome(replay) == outcome(source)
    (approval,) = Approval.objects.filter(run=replay)
    (recorded,) = Approval.objects.filter(run=source)
    assert approval.status == recorded.status == {"approve": "approved", "deny": "denied"}[decision]
    # Their decision, applied by the worker.
    assert (approval.decided_by, approval.decided_via) == (owner, "worker")
    audit = AuditEvent.objects.get(run=replay, action="approval.decide")
    assert (audit.actor, audit.interface, audit.details["decision"]) == (owner, "worker", decision)


def test_a_stopped_run_is_stopped_at_the_same_point(owner, monkeypatch):
    run = make_run(owner, "Write notes.txt saying hello, then read it back", fast_path=False)
    script = notes_script()

    class StoppedAfterStep1(ScriptedProvider):
        def complete(self, request):
            answer = super().complete(request)
            if "AGENTDESK:STEP 0" in request.messages[0]["content"] and not answer.tool_calls:
                run_cancel(run=run, actor=owner, interface=AuditInterface.API)
            return answer

    execute_run(run.pk, provider=StoppedAfterStep1(script), registry=get_registry())
    run.refresh_from_db()
    assert run.status == "cancelled"
    no_model(monkeypatch)

    replay = replayed(run)

    assert divergences(replay) == []
    assert outcome(replay) == outcome(run)
    assert replay.error_code == "CANCELLED"


def test_a_plan_a_person_edited_at_its_approval_is_edited_so_again(owner, monkeypatch):
    run = run_create(
        task=Task.objects.create(owner=owner, text="Read notes.txt back", approve_plan=True)
    )
    script = notes_script()
    script[-1] = {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "hello", evidence=[1])]}
    provider = ScriptedProvider(script)
    execute_run(run.pk, provider=provider, registry=get_registry())
    approval = Approval.objects.get(run=run, status="pending")
    edited = {"steps": [{"objective": "Write hello to notes.txt", "tool_names": ["write_file"]}]}
    approval_decide(
        approval_id=approval.pk,
        decision="modify",
        arguments=edited,
        note="Only write it.",
        actor=owner,
        interface=AuditInterface.WEB,
    )
    execute_run(run.pk, provider=provider, registry=get_registry())
    run.refresh_from_db()
    assert run.status == "succeeded", run.error_message
    no_model(monkeypatch)

    replay = replayed(run)

    assert divergences(replay) == [], divergences(replay)[0].get("diff")
    assert outcome(replay) == outcome(run)
    (mine,) = Approval.objects.filter(run=replay)
    assert (mine.status, mine.decision_arguments) == ("modified", approval_now(approval))


def approval_now(approval):
    approval.refresh_from_db()
    return approval.decision_arguments


def test_a_recorded_decision_that_cannot_be_applied_is_a_divergence(owner, monkeypatch):
    """The recorded MODIFY arguments no longer fit the tool: the replay says so and waits for
    a person, instead of the decision's error escaping its delivery."""
    source = decided(owner, "approve")
    Approval.objects.filter(run=source).update(
        status="modified", decision_arguments={"no_such_argument": 1}
    )
    no_model(monkeypatch)

    replay = replayed(source)

    assert replay.status == "waiting_approval"
    (found,) = divergences(replay)
    assert found["kind"] == "approval_not_applied"
    assert "could not be applied" in found["message"], found
    assert Approval.objects.get(run=replay).status == "pending"
    assert replay.replay_report["count"] == 1


class NoteTool(SendTool):
    """A tool with a `note` argument of its own: external, so its calls ask."""

    spec = replace(
        SendTool.spec,
        name="send_note",
        input_schema={
            "type": "object",
            "properties": {"to": {"type": "string"}, "note": {"type": "string"}},
            "required": ["to", "note"],
            "additionalProperties": False,
        },
    )


NOTE_SCRIPT = [
    {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("send it", ["send_note"]))]},
    {"match": ["AGENTDESK:STEP 0", "sent"], "replies": [{"content": "sent"}], "repeat": True},
    {
        "match": "AGENTDESK:STEP 0",
        "replies": [tool_call("send_note", to="ann", note="hi")],
        "repeat": True,
    },
    {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "sent", evidence=[1])]},
]


def test_a_tool_s_own_note_argument_a_person_modified_is_replayed_with_it(owner, monkeypatch):
    tool = NoteTool()
    run = make_run(owner, "Send Ann a note", fast_path=False)
    provider = ScriptedProvider(NOTE_SCRIPT)
    execute_run(run.pk, provider=provider, registry=make_registry(tool))
    approval = Approval.objects.get(run=run, status="pending")
    approval_decide(
        approval_id=approval.pk,
        decision="modify",
        arguments={"to": "bob", "note": "see you"},
        actor=owner,
        interface=AuditInterface.WEB,
    )
    execute_run(run.pk, provider=provider, registry=make_registry(tool))
    run.refresh_from_db()
    assert run.status == "succeeded", run.error_message
    no_model(monkeypatch)

    replay = replayed(run, registry=make_registry(tool))

    assert divergences(replay) == []
    assert replay.status == "succeeded"
    (mine,) = Approval.objects.filter(run=replay)
    assert (mine.status, mine.decision_arguments) == ("modified", {"to": "bob", "note": "see you"})
    assert tool.calls == [{"to": "bob", "note": "see you"}] * 2
