"""Approvals on the run page: the pending call's card and dialog, brought and removed live."""

import json
from html import escape

import pytest

from agents_app.approvals.decisions import approval_decide
from agents_app.core.events import event_message
from agents_app.models import Approval, RunEvent, Step, Task
from agents_app.runs.services import run_create
from agents_app.web import fragments
from tests.support.approvals import SCRIPT, decide_url, dialog_buttons, drive, parked, textarea_text
from tests.support.markup import by_id, elements, ids, top_level
from tests.support.script import plan_reply, step, tool_call
from tests.support.scripted_provider import ScriptedProvider

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_run_page_shows_the_pending_call_in_a_dialog(owner, owner_session, registry):
    run, _, approval = parked(owner, registry)
    Step.objects.filter(pk=approval.step_id).update(reasoning="Ann asked for a note.")
    Approval.objects.filter(pk=approval.pk).update(reasoning="Ann asked for a note.")

    html = owner_session.get(f"/runs/{run.pk}/").content.decode()

    dialog = by_id(html, "approval-dialog")
    assert dialog["data-approval-id"] == str(approval.pk) and "data-autoopen" in dialog
    assert by_id(html, "approval")["data-approval-id"] == str(approval.pk)
    assert dialog_buttons(html) == ["approve", "skip", "deny", "cancel", "modify"]
    assert json.loads(textarea_text(html)) == {"to": "ann", "text": "hi"}
    assert '<pre class="approval-arguments">{\n  &quot;to&quot;: &quot;ann&quot;' in html
    assert 'data-risk="external"' in html and '<dd class="level">moderate</dd>' in html
    assert "moderate: no rule of yours allows it" in html
    assert "Ann asked for a note." in html
    remember = [a["value"] for t, a in elements(html) if a.get("name") == "remember"]
    assert remember == ["", "tool", "call"]
    form = next(a for t, a in elements(html) if t == "form" and "approvals" in a.get("action", ""))
    assert form["hx-post"] == decide_url(approval) and form["hx-target"] == "#approval"
    assert by_id(html, "run-status")["data-status"] == "waiting_approval"
    assert ">waiting for approval</span>" in html


def test_a_manual_call_offers_no_rule_to_remember(owner, owner_session, registry):
    script = [
        {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("look", ["shell"]))]},
        {"match": "AGENTDESK:STEP 0", "replies": [tool_call("shell", command="ls")]},
        *SCRIPT,
    ]
    run, _, _ = parked(owner, registry, script)

    html = owner_session.get(f"/runs/{run.pk}/").content.decode()

    assert 'name="remember"' not in html
    assert "it asks every time" in html


def test_code_to_run_is_shown_whole_as_it_runs_above_the_arguments(owner, owner_session, registry):
    run, _, approval = parked(owner, registry)
    code = "import math\n\nprint(math.pi)  # <b>not markup</b>\n" + "x = 1\n" * 300
    Approval.objects.filter(pk=approval.pk).update(
        tool="run_python", arguments={"code": code, "argv": ["python3", "-m", "unittest", "a b"]}
    )

    html = owner_session.get(f"/runs/{run.pk}/").content.decode()

    shown = html.split('<pre class="approval-code"><code>')
    assert len(shown) == 3  # the code, then the command line
    assert shown[1].split("</code></pre>")[0] == escape(code)
    assert shown[2].split("</code></pre>")[0] == "python3 -m unittest &#x27;a b&#x27;"
    assert "Code it runs" in html and html.index("approval-code") < html.index("approval-arguments")


def test_a_plan_approval_shows_the_steps_and_offers_approve_edit_reject_or_cancel(
    owner, owner_session, registry
):
    task = Task.objects.create(owner=owner, text="Do it", approve_plan=True)
    run = run_create(task=task)
    drive(run, ScriptedProvider(SCRIPT), registry)

    html = owner_session.get(f"/runs/{run.pk}/").content.decode()

    assert "Approve the plan?" in html
    assert "send the note" in html and "wrap up" in html
    # modify twice: the steps form's and the raw JSON's (issue 32, finding 6)
    assert dialog_buttons(html) == ["approve", "cancel", "modify", "modify", "deny"]
    assert by_id(html, "approval-arguments")["name"] == "arguments"
    assert by_id(html, "approval-note")["name"] == "note"


def test_a_run_without_a_pending_approval_has_an_empty_card(owner, owner_session, registry):
    run, _, approval = parked(owner, registry)
    approval_decide(approval_id=approval.pk, decision="deny", actor=owner, interface="web")

    html = owner_session.get(f"/runs/{run.pk}/").content.decode()

    assert by_id(html, "approval")["data-approval-id"] == ""
    assert "approval-dialog" not in ids(html)


# --- live -------------------------------------------------------------------------------------


def live(run, after=0):
    events = [event_message(e) for e in RunEvent.objects.filter(run=run, seq__gt=after)]
    return fragments.render_run_events(run=run, events=events)


def test_an_approval_required_event_brings_the_card_live(owner, registry):
    run, _, approval = parked(owner, registry)
    before = RunEvent.objects.get(run=run, type="approval_required").seq - 1

    html = live(run, after=before)

    card = next(attrs for _, attrs in top_level(html) if attrs.get("id") == "approval")
    assert card["hx-swap-oob"] == "true" and card["data-approval-id"] == str(approval.pk)
    assert "approval-dialog" in ids(html)
    assert "waiting for approval of step 1 send (moderate)" in html


def test_an_approval_decided_event_removes_the_card_live(owner, registry):
    run, _, approval = parked(owner, registry)
    last = run.event_seq
    approval_decide(approval_id=approval.pk, decision="approve", actor=owner, interface="web")

    html = live(run, after=last)

    card = next(attrs for _, attrs in top_level(html) if attrs.get("id") == "approval")
    assert card["data-approval-id"] == "" and "approval-dialog" not in ids(html)
    assert "approval approved by owner" in html
