"""Approvals over MCP: a chat client lists the calls waiting for its user and decides them,
with REST's rules (owner or staff, the tool's schema for modify, the first decision wins)."""

import json

import pytest

from agents_app.models import Approval, AuditEvent, Run, ToolCall
from tests.support.approvals import drive, parked
from tests.support.tools import FinishTool, make_registry

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def waiting(owner, send):
    """A run of the owner's parked on a call of `send` (moderate: it asks)."""
    registry = make_registry(send, FinishTool())
    run, provider, approval = parked(owner, registry)
    return run, provider, registry, approval


def error_of(result) -> dict:
    assert result.is_error, result
    return json.loads(result.content[0].text)["error"]


def test_list_approvals_shows_the_users_pending_calls(owner_mcp, outsider_mcp, waiting):
    as_owner = owner_mcp
    as_outsider = outsider_mcp
    run, _, _, approval = waiting

    listed = as_owner.call("list_approvals").structured_content
    assert listed["count"] == 1 and (listed["page"], listed["page_size"]) == (1, 20)
    shown = listed["results"][0]
    assert (shown["id"], shown["run_id"], shown["status"]) == (approval.pk, run.pk, "pending")
    assert (shown["tool"], shown["arguments"]) == ("send", {"to": "ann", "text": "hi"})
    assert shown["risk"] == "external" and shown["links"]["decide"].endswith(f"/{approval.pk}")
    assert as_owner.call("list_approvals", {"status": "approved"}).structured_content["count"] == 0
    assert as_outsider.call("list_approvals").structured_content["count"] == 0


def test_the_owner_denies_a_call_and_the_run_goes_on_without_it(owner_mcp, waiting, send):
    run, provider, registry, approval = waiting

    result = owner_mcp.call("decide_approval", {"approval_id": approval.pk, "decision": "deny"})
    assert not result.is_error, result
    decided = result.structured_content
    assert (decided["status"], decided["decided_by"], decided["decided_via"]) == (
        "denied",
        "owner",
        "mcp",
    )
    resumed = Run.objects.get(pk=run.pk)  # queued again: any worker continues it
    assert (resumed.status, resumed.lease_owner) == ("running", "")

    drive(run, provider, registry)
    assert run.status == "succeeded" and send.calls == []
    assert ToolCall.objects.get(run=run).status == "denied"
    decide = AuditEvent.objects.get(run_id=run.pk, action="approval.decide")
    assert (decide.interface, decide.details["decision"]) == ("mcp", "deny")


def test_modify_runs_the_edited_call_and_a_second_decision_is_a_conflict(owner_mcp, waiting, send):
    run, provider, registry, approval = waiting
    edited = {"to": "bob", "text": "hello"}

    result = owner_mcp.call(
        "decide_approval",
        {"approval_id": approval.pk, "decision": "modify", "arguments": edited},
    )
    assert not result.is_error, result
    assert result.structured_content["decision_arguments"] == edited

    again = error_of(
        owner_mcp.call("decide_approval", {"approval_id": approval.pk, "decision": "approve"})
    )
    assert again["code"] == "CONFLICT" and again["trace_id"]
    drive(run, provider, registry)
    assert send.calls == [edited]


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        ({"decision": "modify", "arguments": {"to": 7}}, "INVALID_ARGUMENTS"),
        ({"decision": "approve", "arguments": {"to": "x", "text": "y"}}, "VALIDATION_ERROR"),
        ({"decision": "maybe"}, "VALIDATION_ERROR"),
        ({"decision": "approve", "remember": "forever"}, "VALIDATION_ERROR"),
    ],
)
def test_a_bad_decision_is_refused_and_the_call_still_waits(owner_mcp, waiting, arguments, code):
    _, _, _, approval = waiting

    error = error_of(owner_mcp.call("decide_approval", {"approval_id": approval.pk, **arguments}))
    assert error["code"] == code, error
    assert Approval.objects.get(pk=approval.pk).status == "pending"


def test_an_outsider_cannot_decide_another_users_approval(outsider_mcp, waiting):
    _, _, _, approval = waiting

    error = error_of(
        outsider_mcp.call("decide_approval", {"approval_id": approval.pk, "decision": "approve"})
    )
    assert (error["code"], error["message"]) == ("NOT_FOUND", f"Approval {approval.pk} not found")
    assert Approval.objects.get(pk=approval.pk).status == "pending"
