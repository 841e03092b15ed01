"""Parking a run on an approval and continuing it, in-process (no Celery): the engine side of
every decision. The same paths through a real worker are in test_worker_decisions.py."""

import pytest

from agents_app.approvals.decisions import approval_decide, approval_expire
from agents_app.approvals.rules import rule_create
from agents_app.core.audit import arguments_sha256
from agents_app.core.errors import DomainError
from agents_app.models import Approval, AuditEvent, RunEvent, Step, Task, ToolCall
from agents_app.runs.services import run_create
from tests.support.approvals import SCRIPT, drive, parked
from tests.support.runs import decisions_made, executor_of, make_run
from tests.support.script import plan_reply, step, tool_call, verdict
from tests.support.scripted_provider import ScriptedProvider

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_moderate_call_parks_the_run_and_approval_runs_it_once(owner, send, registry):
    run, provider, approval = parked(owner, registry)
    assert (approval.tool, approval.arguments, approval.risk, approval.level) == (
        "send",
        {"to": "ann", "text": "hi"},
        "external",
        "moderate",
    )
    assert send.calls == []
    call = ToolCall.objects.get(run=run)
    assert call.status == "waiting_approval" and approval.tool_call_id == call.pk
    assert Step.objects.get(run=run, index=0).progress["approval_id"] == approval.pk
    requests_before = len(provider.requests)

    approval_decide(approval_id=approval.pk, decision="approve", actor=owner, interface="web")
    with pytest.raises(DomainError) as second:
        approval_decide(approval_id=approval.pk, decision="approve", actor=owner, interface="api")
    assert second.value.code == "CONFLICT"
    run.refresh_from_db()
    assert run.status == "running"
    drive(run, provider, registry)

    assert run.status == "succeeded"
    assert send.calls == [{"to": "ann", "text": "hi"}]
    call.refresh_from_db()
    assert call.status == "succeeded"
    # The step resumed where it stopped: the next model turn, not the first one again.
    step0_requests = [
        r
        for r in provider.requests[requests_before:]
        if "AGENTDESK:STEP 0" in r.messages[0]["content"]
    ]
    assert len(step0_requests) == 1
    assert step0_requests[0].messages[-1]["role"] == "tool"
    assert Step.objects.get(run=run, index=0).retry_count == 0
    types = list(RunEvent.objects.filter(run=run).values_list("type", flat=True))
    assert "approval_required" in types and "approval_decided" in types
    actions = list(AuditEvent.objects.filter(run_id=run.pk).values_list("action", flat=True))
    assert actions.count("approval.request") == 1 and actions.count("approval.decide") == 1
    assert actions.count("tool.call") == 1


def test_modify_runs_the_edited_arguments(owner, send, registry):
    run, provider, approval = parked(owner, registry)
    approval_decide(
        approval_id=approval.pk,
        decision="modify",
        arguments={"to": "bob", "text": "hello"},
        actor=owner,
        interface="api",
    )
    drive(run, provider, registry)
    assert run.status == "succeeded"
    assert send.calls == [{"to": "bob", "text": "hello"}]
    assert ToolCall.objects.get(run=run).arguments == {"to": "bob", "text": "hello"}


def test_modify_with_invalid_arguments_is_refused_and_stays_pending(owner, registry):
    run, _, approval = parked(owner, registry)
    with pytest.raises(DomainError) as refused:
        approval_decide(
            approval_id=approval.pk,
            decision="modify",
            arguments={"to": 5},
            actor=owner,
            interface="api",
        )
    assert refused.value.code == "INVALID_ARGUMENTS"
    approval.refresh_from_db()
    assert approval.status == "pending"


def test_skip_skips_the_step_and_its_dependents(owner, send, registry):
    run, provider, approval = parked(owner, registry)
    approval_decide(approval_id=approval.pk, decision="skip", actor=owner, interface="web")
    drive(run, provider, registry)
    assert send.calls == []
    assert [s.status for s in Step.objects.filter(run=run).order_by("index")] == [
        "skipped",
        "skipped",
    ]
    assert ToolCall.objects.get(run=run).status == "skipped"


def test_cancel_cancels_the_run_at_once(owner, send, registry):
    run, _, approval = parked(owner, registry)
    approval_decide(approval_id=approval.pk, decision="cancel", actor=owner, interface="web")
    run.refresh_from_db()
    assert run.status == "cancelled" and send.calls == []
    # The step that waited was cancelled, not failed; the one after it never started.
    assert list(run.steps.order_by("index").values_list("status", flat=True)) == [
        "cancelled",
        "skipped",
    ]


def test_deny_tells_the_model_and_the_step_goes_on(owner, send, registry):
    run, provider, approval = parked(owner, registry)
    approval_decide(approval_id=approval.pk, decision="deny", actor=owner, interface="web")
    drive(run, provider, registry)
    assert run.status == "succeeded" and send.calls == []
    last = [r for r in provider.requests if "AGENTDESK:STEP 0" in r.messages[0]["content"]][-1]
    assert "denied" in last.messages[-1]["content"]
    # Without its call the step is not completed, and the model is not pushed to ask again.
    step0 = Step.objects.get(run=run, index=0)
    assert step0.status == "failed" and step0.error.startswith("EVIDENCE_MISSING")
    assert "a person denied its call" in step0.error


def test_a_rule_for_the_tool_lets_the_call_through(owner, send, registry):
    rule_create(owner_id=owner.pk, tool="send", arguments=None, actor=owner, interface="web")
    run = make_run(owner)
    drive(run, ScriptedProvider(SCRIPT), registry)
    assert run.status == "succeeded" and len(send.calls) == 1
    audit = AuditEvent.objects.get(run_id=run.pk, action="tool.call")
    assert audit.details["approval"] == "rule"


def test_an_exact_call_rule_matches_only_that_call(owner, send, registry):
    rule_create(
        owner_id=owner.pk,
        tool="send",
        arguments={"to": "someone else", "text": "hi"},
        actor=owner,
        interface="web",
    )
    parked(owner, registry)
    rule_create(
        owner_id=owner.pk,
        tool="send",
        arguments={"to": "ann", "text": "hi"},
        actor=owner,
        interface="web",
    )
    run = make_run(owner)
    drive(run, ScriptedProvider(SCRIPT), registry)
    assert run.status == "succeeded"
    assert arguments_sha256({"text": "hi", "to": "ann"}) == arguments_sha256(send.calls[-1])


def test_a_command_argument_makes_a_call_manual_even_with_a_rule(owner, registry):
    rule_create(owner_id=owner.pk, tool="shell", arguments=None, actor=owner, interface="web")
    script = [
        {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("look", ["shell"]))]},
        {"match": "AGENTDESK:STEP 0", "replies": [tool_call("shell", command="ls")]},
        *SCRIPT,
    ]
    _, _, approval = parked(owner, registry, script)
    assert (approval.risk, approval.level) == ("code_execution", "manual")


def test_plan_approval_waits_before_any_step(owner, send, registry):
    rule_create(owner_id=owner.pk, tool="send", arguments=None, actor=owner, interface="web")
    task = Task.objects.create(owner=owner, text="Do it", approve_plan=True)
    run = run_create(task=task)
    provider = ScriptedProvider(SCRIPT)
    drive(run, provider, registry)
    assert run.status == "waiting_approval"
    approval = Approval.objects.get(run=run)
    assert approval.kind == "plan" and len(approval.arguments["steps"]) == 2
    assert send.calls == []
    with pytest.raises(DomainError) as refused:
        approval_decide(approval_id=approval.pk, decision="skip", actor=owner, interface="web")
    assert refused.value.code == "VALIDATION_ERROR"
    approval_decide(approval_id=approval.pk, decision="approve", actor=owner, interface="web")
    drive(run, provider, registry)
    assert run.status == "succeeded" and len(send.calls) == 1


@pytest.mark.dialect
@pytest.mark.parametrize(
    ("strategy", "status", "sent"),
    [("deny", "succeeded", 0), ("skip", "failed", 0), ("cancel", "cancelled", 0)],
)
def test_an_expired_approval_decides_by_its_strategy(owner, send, registry, strategy, status, sent):
    task = Task.objects.create(
        owner=owner, text="Do it", approval_timeout=0, approval_on_timeout=strategy
    )
    task.approval_timeout = 1
    task.save()
    run = run_create(task=task)
    provider = ScriptedProvider(
        [
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(strategy == "deny", "done")]},
            *SCRIPT,
        ]
    )
    drive(run, provider, registry)
    approval = Approval.objects.get(run=run)
    assert approval.expires_at is not None and approval.on_timeout == strategy
    assert approval_expire(approval.pk) > 0  # not due yet
    Approval.objects.filter(pk=approval.pk).update(expires_at=approval.created_at)
    assert approval_expire(approval.pk) == 0
    approval.refresh_from_db()
    assert approval.expired and approval.decided_by is None
    drive(run, provider, registry)
    assert run.status == status and len(send.calls) == sent
    decide = AuditEvent.objects.get(run_id=run.pk, action="approval.decide")
    assert decide.actor_label == "worker" and decide.details["expired"] is True


@pytest.mark.dialect
def test_stopping_a_waiting_run_ends_it_and_voids_the_approval(owner, registry, owner_session):
    from agents_app.runs.services import run_cancel

    run, _, approval = parked(owner, registry)
    run_cancel(run=run, actor=owner, interface="web")
    run.refresh_from_db()
    approval.refresh_from_db()
    assert run.status == "cancelled" and approval.status == "void"
    assert ToolCall.objects.get(run=run).status == "skipped"
    assert run.steps.get(index=0).status == "cancelled"
    page = owner_session.get(f"/runs/{run.pk}/").content.decode()
    assert '<span class="badge" data-status="cancelled">cancelled</span>' in page
    assert 'data-status="failed"' not in page
    with pytest.raises(DomainError) as late:
        approval_decide(approval_id=approval.pk, decision="approve", actor=owner, interface="web")
    assert late.value.code == "CONFLICT"


class WorkerDied(BaseException):
    """The worker process dying mid-step: nothing in the engine catches it, so the rows stay as
    a crash leaves them."""


def test_a_step_cut_short_after_its_approved_call_starts_again_without_running_it_again(
    owner, send, registry
):
    def die(request):
        raise WorkerDied

    script = [
        {
            "match": "AGENTDESK:STEP 0",
            "replies": [tool_call("send", to="ann", text="hi"), die, {"content": "sent before"}],
        },
        *SCRIPT,
    ]
    run, provider, approval = parked(owner, registry, script)
    approval_decide(approval_id=approval.pk, decision="approve", actor=owner, interface="web")
    with pytest.raises(WorkerDied):
        drive(run, provider, registry)
    assert send.calls == [{"to": "ann", "text": "hi"}]

    drive(run, provider, registry)

    # The approval was used up by the call it let through: the step starts from scratch.
    assert send.calls == [{"to": "ann", "text": "hi"}]
    assert Step.objects.get(run=run, index=0).retry_count == 1
    started = RunEvent.objects.filter(run=run, type="step_started").order_by("seq").last()
    assert started.payload["resumed_after_interruption"] is True
    assert started.payload["resumed_after_approval"] is False


@pytest.mark.parametrize("on", ["tool_call", "plan"])
def test_a_worker_that_parked_its_run_decides_nothing_more_about_it(
    owner, send, registry, monkeypatch, on
):

    decisions = decisions_made(monkeypatch)
    task = Task.objects.create(owner=owner, text="Do it", approve_plan=on == "plan")
    run = run_create(task=task)
    drive(run, ScriptedProvider(SCRIPT), registry)
    assert run.status == "waiting_approval" and Approval.objects.get(run=run).kind == on

    # Parked, the run is nobody's: the delivery ended with its parking commit, its last
    # decision made before it (to plan; to execute a step).
    assert "waiting_approval" not in decisions and decisions


@pytest.mark.parametrize("expired", [True, False], ids=["expired", "denied"])
def test_the_model_is_told_when_a_denial_came_from_a_timeout(owner, send, registry, expired):
    run, provider, approval = parked(owner, registry)
    asked = len(provider.requests)
    if expired:
        Approval.objects.filter(pk=approval.pk).update(
            on_timeout="deny", expires_at=approval.created_at
        )
        assert approval_expire(approval.pk) == 0
    else:
        approval_decide(approval_id=approval.pk, decision="deny", actor=owner, interface="web")

    drive(run, provider, registry)

    told = "\n".join(str(m.get("content")) for r in provider.requests[asked:] for m in r.messages)
    assert "denied" in told.lower() and send.calls == []
    assert ("It timed out waiting for a decision." in told) is expired


def test_a_step_parked_on_an_approval_without_its_call_starts_again(owner, registry):

    run, provider, approval = parked(owner, registry)
    plan_approval = Approval.objects.create(
        run=run, owner=owner, kind="plan", arguments={}, status="approved"
    )
    step0 = Step.objects.get(run=run, index=0)
    executor = executor_of(run, provider, registry)
    assert executor.decided(step0) is None  # nobody decided yet
    approval_decide(approval_id=approval.pk, decision="approve", actor=owner, interface="web")

    assert executor.decided(step0).decision == "approve"
    step0.progress = {**step0.progress, "approval_id": plan_approval.pk}
    assert executor.decided(step0) is None


def test_a_call_a_person_approved_is_audited_as_let_through_by_them(owner, send, registry):
    run, provider, approval = parked(owner, registry)
    approval_decide(approval_id=approval.pk, decision="approve", actor=owner, interface="web")

    drive(run, provider, registry)

    call = AuditEvent.objects.get(run_id=run.pk, action="tool.call")
    assert (call.target, call.details["approval"]) == ("send", "person")
