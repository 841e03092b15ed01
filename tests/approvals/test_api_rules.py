"""The approvals REST API: creating, listing and revoking approval rules."""

import pytest

from agents_app.approvals.rules import rule_create
from agents_app.models import Approval, ApprovalRule, AuditEvent
from tests.support.api import assert_error, post_json
from tests.support.approvals import SCRIPT, drive, parked
from tests.support.runs import make_run
from tests.support.scripted_provider import ScriptedProvider

pytestmark = pytest.mark.django_db(transaction=True)

RULES = "/api/v1/approval-rules"


def test_a_rule_for_a_tool_is_created_listed_and_lets_calls_through(
    owner, owner_api, send, registry
):
    owner_client = owner_api
    response = post_json(owner_client, RULES, {"tool": "send"})

    assert response.status_code == 201
    rule = response.json()
    assert {k: rule[k] for k in ("tool", "exact", "arguments", "arguments_sha256")} == {
        "tool": "send",
        "exact": False,
        "arguments": None,
        "arguments_sha256": "",
    }
    assert rule["created_via"] == "api" and rule["created_at"]
    assert owner_client.get(RULES).json() == {"results": [rule]}
    audit = AuditEvent.objects.get(action="approval_rule.create")
    assert (audit.interface, audit.actor, audit.target) == ("api", owner, "send")
    assert audit.details["rule_id"] == rule["id"]
    run = make_run(owner)
    drive(run, ScriptedProvider(SCRIPT), registry)
    assert run.status == "succeeded" and len(send.calls) == 1
    assert not Approval.objects.exists()


def test_an_exact_rule_matches_only_its_call(owner, owner_api, send, registry):
    other = post_json(owner_api, RULES, {"tool": "send", "arguments": {"to": "x", "text": "hi"}})
    assert other.json()["exact"] is True and len(other.json()["arguments_sha256"]) == 64
    parked(owner, registry)  # the model's call is another one: it still asks

    same = post_json(owner_api, RULES, {"tool": "send", "arguments": {"text": "hi", "to": "ann"}})

    assert same.status_code == 201
    run = make_run(owner)
    drive(run, ScriptedProvider(SCRIPT), registry)
    assert run.status == "succeeded" and send.calls == [{"to": "ann", "text": "hi"}]


@pytest.mark.dialect
def test_creating_an_existing_rule_answers_with_it(owner_api):
    first = post_json(owner_api, RULES, {"tool": "send"}).json()
    again = post_json(owner_api, RULES, {"tool": "send", "arguments": None})

    assert again.status_code == 201 and again.json()["id"] == first["id"]
    assert ApprovalRule.objects.count() == 1
    assert AuditEvent.objects.filter(action="approval_rule.create").count() == 1


@pytest.mark.parametrize(
    "body", [{}, {"tool": ""}, {"tool": "   "}, {"tool": "send", "arguments": ["to"]}]
)
def test_a_bad_rule_is_refused(owner_api, body):
    assert_error(post_json(owner_api, RULES, body), 400, "VALIDATION_ERROR")
    assert not ApprovalRule.objects.exists()


def test_the_owner_revokes_a_rule_and_calls_ask_again(owner, owner_api, registry):
    rule = rule_create(owner_id=owner.pk, tool="send", arguments=None, actor=owner, interface="web")

    response = owner_api.delete(f"{RULES}/{rule.pk}")

    assert response.status_code == 204
    assert not ApprovalRule.objects.exists()
    audit = AuditEvent.objects.get(action="approval_rule.revoke")
    assert (audit.interface, audit.actor, audit.details["rule_id"]) == ("api", owner, rule.pk)
    parked(owner, registry)


def test_an_outsider_neither_sees_nor_revokes_anothers_rule(owner, outsider_api):
    outsider_client = outsider_api
    rule = rule_create(owner_id=owner.pk, tool="send", arguments=None, actor=owner, interface="web")

    assert outsider_client.get(RULES).json() == {"results": []}
    assert_error(outsider_client.delete(f"{RULES}/{rule.pk}"), 404, "NOT_FOUND")
    assert_error(outsider_client.delete(f"{RULES}/999999"), 404, "NOT_FOUND")

    assert ApprovalRule.objects.filter(pk=rule.pk).exists()
    assert not AuditEvent.objects.filter(action="approval_rule.revoke").exists()
