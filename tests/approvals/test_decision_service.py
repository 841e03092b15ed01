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
from agents_app.models import Approval, Step, Task
from agents_app.runs.services import run_create
from tests.support.approvals import SCRIPT, drive, parked
from tests.support.scripted_provider import ScriptedProvider
from tools_app.models import Tool, ToolSource

pytestmark = pytest.mark.django_db(transaction=True)


def plan_waiting(owner, registry) -> Approval:
    Tool.objects.create(name="send", source=ToolSource.BUILTIN)
    run = run_create(task=Task.objects.create(owner=owner, text="Send it", approve_plan=True))
    drive(run, ScriptedProvider(SCRIPT), registry)
    return Approval.objects.get(run=run, status="pending")


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
