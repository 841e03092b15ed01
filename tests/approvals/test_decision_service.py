"""approvals.decisions called as the front ends call it: the limits and the scoping it enforces
itself, whatever a front end checked before."""

import pytest

from agents_app.approvals.decisions import (
    FEEDBACK_MAX_CHARS,
    approval_decide,
    approval_decide_as,
    approval_expire,
)
from agents_app.core.errors import DomainError
from agents_app.models import Approval, Run, Step
from tests.support.approvals import parked, plan_parked
from tools_app.models import Tool, ToolSource

pytestmark = pytest.mark.django_db(transaction=True)


def plan_waiting(owner, registry) -> Approval:
    Tool.objects.create(name="send", source=ToolSource.BUILTIN)  # a tool the plan may name
    return plan_parked(owner, registry)[2]


def test_feedback_on_a_plan_is_taken_up_to_its_limit_and_refused_past_it(owner, send, registry):
    approval = plan_waiting(owner, registry)

    with pytest.raises(DomainError) as refused:
        approval_decide(
            approval_id=approval.pk,
            decision="deny",
            note="x" * (FEEDBACK_MAX_CHARS + 1),
            actor=owner,
            interface="api",
        )
    assert refused.value.code == "VALIDATION_ERROR"
    assert refused.value.details == {"field": "note", "max_length": 2000}

    decided = approval_decide(
        approval_id=approval.pk, decision="deny", note="x" * 2000, actor=owner, interface="api"
    )
    assert decided.status == "denied"


@pytest.mark.dialect
def test_an_approval_that_is_gone_is_not_found(owner):
    with pytest.raises(DomainError) as missing:
        approval_decide(approval_id=10**9, decision="approve", actor=owner, interface="api")

    assert missing.value.code == "NOT_FOUND"
    assert approval_expire(10**9) == 0.0


def test_a_decision_sent_by_someone_else_is_not_found_and_decides_nothing(
    owner, outsider, send, registry
):
    _, _, approval = parked(owner, registry)

    with pytest.raises(DomainError) as refused:
        approval_decide_as(
            user=outsider, approval_id=approval.pk, decision="approve", interface="api"
        )

    assert refused.value.code == "NOT_FOUND"
    approval.refresh_from_db()
    assert approval.status == "pending" and send.calls == []


def test_a_skipped_call_s_step_is_skipped_and_keeps_nothing_of_its_wait(owner, send, registry):
    run, _, approval = parked(owner, registry)

    approval_decide(approval_id=approval.pk, decision="skip", actor=owner, interface="web")

    step = Step.objects.get(pk=approval.step_id)
    assert (step.status, step.progress) == ("skipped", None)


def test_an_edited_plan_has_at_most_the_steps_a_planner_may_make(settings):
    from agents_app.approvals.decisions import check_plan

    settings.AGENT_MAX_STEPS = 3
    steps = [{"objective": f"step {n}", "tool_names": [], "depends_on": []} for n in range(4)]

    assert len(check_plan({"steps": steps[:3]})["steps"]) == 3
    with pytest.raises(DomainError) as refused:
        check_plan({"steps": steps})
    assert refused.value.code == "INVALID_ARGUMENTS"
    assert refused.value.message == "A plan has at most 3 steps"


def test_an_edited_plan_s_step_may_depend_on_its_first_step(settings):
    from agents_app.approvals.decisions import check_plan

    steps = [
        {"objective": "read", "tool_names": [], "depends_on": []},
        {"objective": "write", "tool_names": [], "depends_on": [0]},
    ]

    assert check_plan({"steps": steps})["steps"][1]["depends_on"] == [0]


def test_a_decided_approval_s_timeout_has_nothing_left_to_decide(owner):
    from datetime import timedelta

    from django.utils import timezone

    from tests.support.approvals import pending

    approval = pending(owner, expires_at=timezone.now() + timedelta(seconds=30), on_timeout="deny")
    Approval.objects.filter(pk=approval.pk).update(status="approved")

    assert approval_expire(approval.pk) == 0.0


def test_a_plan_waiting_past_its_timeout_cancels_its_run_whatever_the_strategy(
    owner, send, registry
):
    approval = plan_waiting(owner, registry)
    Approval.objects.filter(pk=approval.pk).update(
        on_timeout="deny", expires_at=approval.created_at
    )

    assert approval_expire(approval.pk) == 0.0

    approval.refresh_from_db()
    assert (approval.status, approval.expired) == ("cancelled", True)
    assert approval.run.status == "cancelled"


def test_the_sweep_decides_every_overdue_approval_and_leaves_the_rest(owner):
    from datetime import timedelta

    from django.utils import timezone

    from agents_app.approvals.decisions import approvals_expire_due
    from tests.support.approvals import pending

    due = pending(owner, expires_at=timezone.now() - timedelta(seconds=1), on_timeout="deny")
    later = pending(owner, expires_at=timezone.now() + timedelta(hours=1), on_timeout="deny")

    assert approvals_expire_due() == [due.pk]

    due.refresh_from_db(), later.refresh_from_db()
    assert (due.status, due.expired) == ("denied", True) and later.status == "pending"


def test_an_edited_plan_s_step_may_not_depend_on_a_step_before_the_first(settings):
    from agents_app.approvals.decisions import check_plan

    steps = [
        {"objective": "read", "tool_names": [], "depends_on": []},
        {"objective": "write", "tool_names": [], "depends_on": [-1]},
    ]

    with pytest.raises(DomainError) as refused:
        check_plan({"steps": steps})
    assert refused.value.message == "Step 2 may depend on earlier steps only"


def test_remember_is_one_of_its_values(owner, send, registry):
    _, _, approval = parked(owner, registry)

    with pytest.raises(DomainError) as refused:
        approval_decide(
            approval_id=approval.pk,
            decision="approve",
            remember="forever",
            actor=owner,
            interface="api",
        )

    assert refused.value.code == "VALIDATION_ERROR"
    assert refused.value.details == {"field": "remember", "allowed": ["tool", "call", "host"]}


def test_an_approval_remembered_says_so_and_its_rule_lets_the_next_call_through(
    owner, send, registry
):
    from agents_app.models import ApprovalRule

    _, _, approval = parked(owner, registry)

    decided = approval_decide(
        approval_id=approval.pk, decision="approve", remember="tool", actor=owner, interface="web"
    )

    assert decided.remember == "tool"
    assert Approval.objects.get(pk=approval.pk).remember == "tool"
    assert ApprovalRule.objects.filter(owner=owner, tool="send").exists()


def test_a_decision_committed_between_the_read_and_the_lock_stands(
    owner, send, registry, monkeypatch
):
    from agents_app.approvals import decisions

    _, _, approval = parked(owner, registry)
    locked_run = decisions.locked_run

    def another_decides_first(run_id, *args, **kwargs):
        Approval.objects.filter(pk=approval.pk).update(status="denied")  # a person, just now
        return locked_run(run_id, *args, **kwargs)

    monkeypatch.setattr(decisions, "locked_run", another_decides_first)

    with pytest.raises(DomainError) as refused:
        approval_decide(approval_id=approval.pk, decision="approve", actor=owner, interface="api")

    assert refused.value.code == "CONFLICT" and send.calls == []


def test_a_void_approval_is_refused_without_naming_a_decider(owner, send, registry):
    _, _, approval = parked(owner, registry)
    Approval.objects.filter(pk=approval.pk).update(status="void")

    with pytest.raises(DomainError) as refused:
        approval_decide(approval_id=approval.pk, decision="approve", actor=owner, interface="api")

    assert refused.value.message == f"Approval {approval.pk} was already decided: void"


@pytest.mark.parametrize("decision", ["skip", "cancel"])
def test_a_call_skipped_or_cancelled_at_its_approval_says_so(owner, send, registry, decision):
    from agents_app.models import ToolCall

    run, _, approval = parked(owner, registry)

    approval_decide(approval_id=approval.pk, decision=decision, actor=owner, interface="web")

    call = ToolCall.objects.get(pk=approval.tool_call_id)
    assert (call.status, call.error) == ("skipped", f"{decision} at an approval")
    run.refresh_from_db()
    assert run.cancel_requested is (decision == "cancel")


def test_a_decision_is_one_of_its_values(owner, send, registry):
    _, _, approval = parked(owner, registry)

    with pytest.raises(DomainError) as refused:
        approval_decide(approval_id=approval.pk, decision="maybe", actor=owner, interface="api")

    assert refused.value.code == "VALIDATION_ERROR"
    assert refused.value.details["field"] == "decision"


def test_a_decision_is_audited_against_its_tool_or_its_plan(owner, send, registry):
    from agents_app.models import AuditEvent

    _, _, call = parked(owner, registry)
    plan = plan_waiting(owner, registry)

    for approval in (call, plan):
        approval_decide(approval_id=approval.pk, decision="cancel", actor=owner, interface="web")

    audited = AuditEvent.objects.filter(action="approval.decide").order_by("id")
    assert [a.target for a in audited] == ["send", "plan"]


def test_a_rejected_plan_s_run_is_queued_to_plan_again(owner, send, registry, monkeypatch):
    approval = plan_waiting(owner, registry)
    sent = []
    monkeypatch.setattr(
        "agents_app.runs.lifecycle.dispatch.send",
        lambda task, run_id, countdown=None: sent.append(run_id),
    )

    approval_decide(
        approval_id=approval.pk, decision="deny", note="Ask Bob too", actor=owner, interface="web"
    )

    assert sent == [approval.run_id]
    assert Run.objects.get(pk=approval.run_id).status == "planning"


@pytest.mark.parametrize(("left", "decided"), [(0.0, True), (0.5, False)])
def test_a_timeout_decides_from_the_moment_it_is_due(owner, monkeypatch, left, decided):
    from datetime import timedelta

    from django.utils import timezone

    from agents_app.approvals import decisions
    from tests.support.approvals import pending

    approval = pending(owner, expires_at=timezone.now() + timedelta(hours=1), on_timeout="deny")
    now = approval.expires_at - timedelta(seconds=left)
    monkeypatch.setattr(decisions.timezone, "now", lambda: now)

    assert approval_expire(approval.pk) == left

    approval.refresh_from_db()
    assert (approval.status != "pending") is decided
