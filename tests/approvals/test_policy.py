"""Which calls wait for a person, and how long a person is waited for."""

import dataclasses
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.utils import timezone

from agents_app.approvals.parking import park_on_call, park_on_plan, schedule_expiry
from agents_app.approvals.policy import (
    REASONING_MAX_CHARS,
    Ask,
    approval_policy,
    timeout_policy,
    yolo_active,
)
from agents_app.approvals.rules import yolo_grant, yolo_set
from agents_app.core.audit import APPROVAL_REQUEST, arguments_sha256
from agents_app.engine.executor import AwaitApproval
from agents_app.engine.taint import Source, Taint
from agents_app.models import (
    ApprovalRule,
    AuditEvent,
    Plan,
    RunStatus,
    Step,
    ToolCall,
    ToolCallStatus,
)
from agents_app.runs.writer import locked_run
from tests.support.runs import advance, make_run
from tests.support.tools import EchoTool, SendTool
from tools_app.registry import ApprovalLevel, ToolSpec

SEND = SendTool.spec  # external side effects: moderate
MESSAGE = {"to": "ops", "text": "hi"}
ERASE = ToolSpec(
    name="erase",
    description="Erase everything.",
    input_schema={"type": "object"},
    capabilities=frozenset(),
    domain="system",
    approval_level=ApprovalLevel.MANUAL,
)


def yolo(user, *, on: bool = True):
    yolo_grant(user=user, granted=True, actor=None, interface="admin")
    fresh = type(user).objects.get(pk=user.pk)
    yolo_set(user=fresh, on=on, interface="web")
    return type(user).objects.get(pk=user.pk)  # has_perm caches per user object


def rule(owner, tool: str, arguments=None) -> None:
    ApprovalRule.objects.create(
        owner=owner, tool=tool, arguments_sha256=arguments_sha256(arguments) if arguments else ""
    )


@pytest.mark.django_db
def test_a_call_that_needs_nobody_runs(owner, tmp_path):
    assert approval_policy(owner.pk, EchoTool.spec, {"text": "hi"}, tmp_path) == (None, "auto")


@pytest.mark.django_db
def test_a_moderate_call_asks_its_owner_unless_a_rule_of_theirs_allows_it(owner, tmp_path):
    ask, how = approval_policy(owner.pk, SEND, MESSAGE, tmp_path)
    assert isinstance(ask, Ask) and how == ""
    assert ask.classification.level == ApprovalLevel.MODERATE
    assert ask.schema == SEND.input_schema
    rule(owner, "send")
    assert approval_policy(owner.pk, SEND, MESSAGE, tmp_path) == (None, "rule")


@pytest.mark.django_db
def test_a_rule_for_some_arguments_allows_only_those(owner, tmp_path):
    rule(owner, "send", MESSAGE)
    assert approval_policy(owner.pk, SEND, MESSAGE, tmp_path) == (None, "rule")
    ask, _ = approval_policy(owner.pk, SEND, {"to": "all", "text": "hi"}, tmp_path)
    assert ask is not None


@pytest.mark.django_db
def test_someone_elses_rule_or_a_rule_for_another_tool_allows_nothing(owner, teammate, tmp_path):
    rule(teammate, "send")
    rule(owner, "post")
    ask, _ = approval_policy(owner.pk, SEND, MESSAGE, tmp_path)
    assert ask is not None


@pytest.mark.django_db
def test_a_manual_call_asks_even_with_a_rule(owner, tmp_path):
    rule(owner, "erase")
    ask, how = approval_policy(owner.pk, ERASE, {}, tmp_path)
    assert ask is not None and how == ""
    assert ask.reason.startswith("manual")


@pytest.mark.django_db
def test_yolo_runs_every_call_even_a_manual_one(owner, tmp_path):
    yolo(owner)
    assert approval_policy(owner.pk, ERASE, {}, tmp_path) == (None, "yolo")
    assert approval_policy(owner.pk, SEND, MESSAGE, tmp_path) == (None, "yolo")


@pytest.mark.django_db
def test_an_inactive_users_yolo_no_longer_applies(owner, tmp_path):
    owner = yolo(owner)
    assert yolo_active(owner)
    type(owner).objects.filter(pk=owner.pk).update(is_active=False)
    owner = type(owner).objects.get(pk=owner.pk)
    assert not yolo_active(owner)
    ask, how = approval_policy(owner.pk, SEND, MESSAGE, tmp_path)
    assert ask is not None and how == ""


@pytest.mark.django_db
def test_yolo_needs_both_the_permission_and_the_switch(owner, teammate):
    assert not yolo_active(None)
    assert not yolo_active(yolo(owner, on=False))
    assert yolo_active(yolo(teammate))


@pytest.mark.django_db
def test_an_approval_waits_as_long_as_the_task_says_then_as_the_settings_say(owner, settings):
    settings.APPROVAL_TIMEOUT = 300
    settings.APPROVAL_TIMEOUT_STRATEGY = "skip"
    task = make_run(owner).task
    assert timeout_policy(task) == (300.0, "skip")
    task.approval_timeout, task.approval_on_timeout = 0, "cancel"
    assert timeout_policy(task) == (0.0, "cancel")
    task.approval_timeout = 45
    assert timeout_policy(task) == (45.0, "cancel")


def parked_plan_approval(owner):
    run = advance(make_run(owner), RunStatus.PLANNING)
    plan = Plan.objects.create(run=run, version=1, raw={"steps": []})
    with locked_run(run.pk) as w:
        approval = park_on_plan(w, plan)
    return approval


def expiries(callbacks) -> list:
    """The expiry timers a commit would schedule."""
    return [c.args for c in callbacks if getattr(c, "func", None) is schedule_expiry]


@pytest.mark.django_db
def test_an_approval_that_expires_schedules_its_expiry_once_the_park_commits(
    owner, settings, django_capture_on_commit_callbacks
):
    settings.APPROVAL_TIMEOUT = 1
    with django_capture_on_commit_callbacks() as callbacks:
        approval = parked_plan_approval(owner)
    assert approval.expires_at is not None and approval.on_timeout
    assert expiries(callbacks) == [(approval.pk, approval.expires_at)]


@pytest.mark.django_db
def test_an_approval_that_waits_for_ever_schedules_no_expiry(
    owner, settings, django_capture_on_commit_callbacks
):
    settings.APPROVAL_TIMEOUT = 0
    with django_capture_on_commit_callbacks() as callbacks:
        parked_plan_approval(owner)
    assert expiries(callbacks) == []


@pytest.mark.django_db
def test_an_approval_request_is_audited_under_the_tool_or_the_plan(owner):
    approval = parked_plan_approval(owner)
    audit = AuditEvent.objects.get(action=APPROVAL_REQUEST)
    assert (audit.target, audit.details["approval_id"]) == ("plan", approval.pk)


@pytest.mark.django_db
def test_an_approval_with_no_timeout_waits_for_ever(owner, settings):
    settings.APPROVAL_TIMEOUT = 0
    approval = parked_plan_approval(owner)
    assert (approval.expires_at, approval.on_timeout) == (None, "")


@pytest.mark.django_db
def test_an_approval_with_a_timeout_expires_then_as_the_strategy_says(owner, settings):
    settings.APPROVAL_TIMEOUT = 60
    settings.APPROVAL_TIMEOUT_STRATEGY = "deny"
    approval = parked_plan_approval(owner)
    left = approval.expires_at - timezone.now()
    assert timedelta(seconds=50) < left <= timedelta(seconds=60)
    assert approval.on_timeout == "deny"
    approval.run.refresh_from_db()
    assert approval.run.status == RunStatus.WAITING_APPROVAL


@pytest.mark.django_db
def test_why_a_call_asks_cannot_be_changed_once_decided(owner, tmp_path):
    ask, _ = approval_policy(owner.pk, SEND, MESSAGE, tmp_path)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ask.reason = "something else"


@pytest.mark.django_db
def test_the_reasoning_shown_with_a_call_is_cut_at_its_limit(owner, tmp_path):
    run = advance(make_run(owner), RunStatus.RUNNING)
    plan = Plan.objects.create(run=run, version=1, raw={"steps": []})
    step = Step.objects.create(plan=plan, run=run, index=0, objective="send", reasoning="r" * 10)
    call = ToolCall.objects.create(run=run, step=step, tool="send", arguments=MESSAGE)
    ask, _ = approval_policy(owner.pk, SEND, MESSAGE, tmp_path)
    wait = AwaitApproval(
        ask=ask,
        handle=SimpleNamespace(call_id=call.pk),
        tool="send",
        arguments=MESSAGE,
        progress={},
    )
    with locked_run(run.pk) as w:
        approval = park_on_call(w, step, wait, thinking="t" * REASONING_MAX_CHARS)
    assert approval.reasoning == "r" * 10 + "\n\n" + "t" * (REASONING_MAX_CHARS - 12)
    assert len(approval.reasoning) == 8000  # the limit spelled out: changing it is a decision
    call.refresh_from_db()
    assert call.status == ToolCallStatus.WAITING_APPROVAL
    step.refresh_from_db()
    assert step.progress == {"approval_id": approval.pk}
    assert AuditEvent.objects.get(action=APPROVAL_REQUEST).target == "send"


@pytest.mark.django_db
@pytest.mark.dialect
def test_a_tainted_call_a_pattern_rule_lets_through_reads_the_rules_once(
    owner, tmp_path, django_assert_num_queries
):
    # The taint check and the moderate level both ask whether a pattern rule fits: the tool's
    # pin and the owner's pattern rules are read once for both.
    ApprovalRule.objects.create(
        owner=owner, tool="send", pattern_kind="host", pattern="example.com"
    )
    arguments = {"to": "https://example.com/inbox", "text": "hi"}
    source = Source(text="post to https://example.com/inbox", label="http_get call 1")
    taint = Taint(argument="to", fragment="example.com", kind="host", source=source)

    # The pin, the pattern rules, the owner and their YOLO switch, a whole-tool rule: 5 (7
    # when the pin and the pattern rules were read again for the moderate level).
    with django_assert_num_queries(5):
        decided = approval_policy(owner.pk, SEND, arguments, tmp_path, taints=lambda: [taint])
    assert decided == (None, "pattern")
