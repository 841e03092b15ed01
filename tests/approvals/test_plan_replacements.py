"""Every replacement of a run's plan is counted and shown: a person's edit and a person's
rejection as well as the verifier's replans, derived from the rows (issue 32, finding 6)."""

import re
from html import unescape

import pytest

from agents_app.approvals.decisions import approval_decide
from agents_app.models import Approval
from agents_app.runs.selectors import PlanReplacements, plan_replacements
from agents_app.web.run_page import event_summary
from tests.support.approvals import SCRIPT, drive, plan_parked
from tests.support.script import plan_reply, step
from tools_app.models import Tool, ToolSource

pytestmark = pytest.mark.django_db(transaction=True)

SHORTER = plan_reply(step("send Ann a short note", ["send"]))
EDITED = {"steps": [{"objective": "Send Ann hi", "tool_names": ["send"]}]}


@pytest.fixture(autouse=True)
def send_is_a_known_tool():
    Tool.objects.create(name="send", source=ToolSource.BUILTIN)


def _rejected_then_edited(owner, registry):
    script = [{"match": ["AGENTDESK:PLAN", "too long"], "replies": [SHORTER]}, *SCRIPT]
    run, provider, approval = plan_parked(owner, registry, script)
    approval_decide(
        approval_id=approval.pk, decision="deny", note="too long", actor=owner, interface="web"
    )
    drive(run, provider, registry)
    again = Approval.objects.get(run=run, status="pending")
    approval_decide(
        approval_id=again.pk, decision="modify", arguments=EDITED, actor=owner, interface="web"
    )
    run.refresh_from_db()
    return run


def test_a_rejection_and_an_edit_are_two_replacements_of_the_plan(owner, send, registry):
    run = _rejected_then_edited(owner, registry)

    assert run.replans == 0  # the verifier's, against AGENT_MAX_REPLANS
    assert plan_replacements(run) == PlanReplacements(edited=1, rejected=1, verifier=0)
    assert plan_replacements(run).total == 2


def test_the_run_page_shows_the_replacements_and_who_made_them(
    owner, owner_session, send, registry
):
    run = _rejected_then_edited(owner, registry)

    page = owner_session.get(f"/runs/{run.pk}/").content.decode()

    meta = page.split('id="run-meta"')[1].split("</dl>")[0]
    shown = " ".join(re.sub(r"<[^>]+>", " ", unescape(meta)).split())
    assert "Replans 2 (1 edited and 1 rejected by a person, 0 asked by the verifier)" in shown


def test_the_log_says_a_person_asked_for_the_new_plan_and_who_edited_one():
    rejected = {
        "event_type": "replanned",
        "payload": {"replans": 0, "reason": "owner rejected plan v1: too long", "by": "person"},
    }
    edited = {
        "event_type": "plan_created",
        "payload": {"version": 3, "steps": [{}], "edited_by": "owner"},
    }
    verifier = {"event_type": "replanned", "payload": {"replans": 1, "reason": "no file"}}

    assert event_summary(rejected) == "new plan asked: owner rejected plan v1: too long"
    assert event_summary(edited) == "plan v3 with 1 steps, edited by owner"
    assert event_summary(verifier) == "replan 1: no file"


def test_over_rest_a_run_says_who_replaced_its_plan_and_each_edited_version_its_editor(
    owner, owner_api, send, registry
):
    run = _rejected_then_edited(owner, registry)

    body = owner_api.get(f"/api/v1/runs/{run.pk}").json()

    assert body["plan_replacements"] == {"total": 2, "edited": 1, "rejected": 1, "verifier": 0}
    assert [plan["edited"] for plan in body["plans"]] == [
        None,
        None,
        {"by": "owner", "note": ""},
    ]
