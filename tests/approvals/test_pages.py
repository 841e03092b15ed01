"""Approvals in the pages: the run page's card and dialog, deciding through the web (each
decision then continued in-process), the approvals page with its bulk button, the settings page
(rules, YOLO mode), the YOLO banner, and the new-task form's approval options."""

import json
from html import unescape

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from agents_app import fragments
from agents_app.context_processors import approvals
from agents_app.decisions import approval_decide, rule_create, yolo_grant
from agents_app.events import event_message
from agents_app.models import (
    Approval,
    ApprovalRule,
    AuditEvent,
    Run,
    RunEvent,
    Step,
    Task,
    ToolCall,
    UserPreferences,
)
from agents_app.services import run_create
from tests.approvals.support import SCRIPT, drive, parked
from tests.pages.support import by_id, elements, ids, top_level
from tests.support.scripted_provider import ScriptedProvider, plan, step

pytestmark = pytest.mark.django_db(transaction=True)

HTMX = {"HX-Request": "true"}


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_user("staff", password="staff-pass-123", is_staff=True)


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def owner_client(owner) -> Client:
    return client_for(owner)


@pytest.fixture
def outsider_client(outsider) -> Client:
    return client_for(outsider)


def decide_url(approval) -> str:
    return f"/approvals/{approval.pk}/decide/"


def dialog_buttons(html: str) -> list[str]:
    return [
        attrs["value"]
        for tag, attrs in elements(html)
        if tag == "button" and attrs.get("name") == "decision"
    ]


def textarea_text(html: str) -> str:
    start = html.index('name="arguments"')
    return unescape(html[html.index(">", start) + 1 : html.index("</textarea>", start)])


# --- the run page -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/approvals/", "/settings/"])
def test_the_pages_send_an_anonymous_visitor_to_the_login_page(db, path):
    response = Client().get(path)

    assert response.status_code == 302 and response["Location"] == f"/login/?next={path}"


def test_the_run_page_shows_the_pending_call_in_a_dialog(owner, owner_client, registry):
    run, _, approval = parked(owner, registry)
    Step.objects.filter(pk=approval.step_id).update(reasoning="Ann asked for a note.")
    Approval.objects.filter(pk=approval.pk).update(reasoning="Ann asked for a note.")

    html = owner_client.get(f"/runs/{run.pk}/").content.decode()

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


def test_a_manual_call_offers_no_rule_to_remember(owner, owner_client, registry):
    script = {
        **SCRIPT,
        "AGENTDESK:PLAN": [plan(step("look", ["shell"]))],
        "AGENTDESK:STEP 0": [{"tool_calls": [{"name": "shell", "arguments": {"command": "ls"}}]}],
    }
    run, _, _ = parked(owner, registry, script)

    html = owner_client.get(f"/runs/{run.pk}/").content.decode()

    assert 'name="remember"' not in html
    assert "it asks every time" in html


def test_a_plan_approval_shows_the_steps_and_only_approve_or_cancel(owner, owner_client, registry):
    task = Task.objects.create(owner=owner, text="Do it", approve_plan=True)
    run = run_create(task=task)
    drive(run, ScriptedProvider(SCRIPT), registry)

    html = owner_client.get(f"/runs/{run.pk}/").content.decode()

    assert "Approve the plan?" in html
    assert "send the note" in html and "wrap up" in html
    assert dialog_buttons(html) == ["approve", "cancel"]
    assert 'name="arguments"' not in html


def test_a_run_without_a_pending_approval_has_an_empty_card(owner, owner_client, registry):
    run, _, approval = parked(owner, registry)
    approval_decide(approval_id=approval.pk, decision="deny", actor=owner, interface="web")

    html = owner_client.get(f"/runs/{run.pk}/").content.decode()

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


# --- deciding ---------------------------------------------------------------------------------


def test_approve_runs_the_call_and_the_card_goes(owner, owner_client, send, registry):
    run, provider, approval = parked(owner, registry)

    response = owner_client.post(decide_url(approval), {"decision": "approve"}, headers=HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    assert by_id(html, "approval")["data-approval-id"] == ""
    assert by_id(html, "run-status")["data-status"] == "running"
    approval.refresh_from_db()
    assert (approval.status, approval.decided_by, approval.decided_via) == (
        "approved",
        owner,
        "web",
    )
    drive(run, provider, registry)
    assert run.status == "succeeded" and send.calls == [{"to": "ann", "text": "hi"}]


def test_without_htmx_a_decision_returns_to_the_run_page(owner, owner_client, registry):
    run, _, approval = parked(owner, registry)

    response = owner_client.post(decide_url(approval), {"decision": "approve"})

    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"


def test_modify_runs_the_edited_arguments(owner, owner_client, send, registry):
    run, provider, approval = parked(owner, registry)

    response = owner_client.post(
        decide_url(approval),
        {"decision": "modify", "arguments": '{"to": "bob", "text": "hello"}'},
        headers=HTMX,
    )

    assert response.status_code == 200
    drive(run, provider, registry)
    assert run.status == "succeeded" and send.calls == [{"to": "bob", "text": "hello"}]
    assert Approval.objects.get(pk=approval.pk).status == "modified"


def test_approve_ignores_the_arguments_box(owner, owner_client, send, registry):
    run, provider, approval = parked(owner, registry)

    owner_client.post(
        decide_url(approval), {"decision": "approve", "arguments": "{not json"}, headers=HTMX
    )

    drive(run, provider, registry)
    assert send.calls == [{"to": "ann", "text": "hi"}]


def test_skip_skips_the_step(owner, owner_client, send, registry):
    run, provider, approval = parked(owner, registry)

    owner_client.post(decide_url(approval), {"decision": "skip"}, headers=HTMX)

    drive(run, provider, registry)
    assert send.calls == []
    assert Step.objects.get(run=run, index=0).status == "skipped"
    assert ToolCall.objects.get(run=run).status == "skipped"


def test_deny_lets_the_step_go_on_without_the_call(owner, owner_client, send, registry):
    run, provider, approval = parked(owner, registry)

    owner_client.post(decide_url(approval), {"decision": "deny", "remember": "tool"}, headers=HTMX)

    drive(run, provider, registry)
    assert run.status == "succeeded" and send.calls == []
    assert ToolCall.objects.get(run=run).status == "denied"
    assert not ApprovalRule.objects.exists()  # `remember` goes with approve only


def test_cancel_ends_the_run_at_once(owner, owner_client, send, registry):
    run, _, approval = parked(owner, registry)

    response = owner_client.post(decide_url(approval), {"decision": "cancel"}, headers=HTMX)

    run.refresh_from_db()
    assert run.status == "cancelled" and send.calls == []
    assert by_id(response.content.decode(), "run-status")["data-status"] == "cancelled"


def test_approve_and_always_allow_adds_a_rule(owner, owner_client, registry):
    _, _, approval = parked(owner, registry)

    owner_client.post(decide_url(approval), {"decision": "approve", "remember": "tool"})

    rule = ApprovalRule.objects.get(owner=owner)
    assert (rule.tool, rule.is_exact, rule.created_via) == ("send", False, "web")


def test_modify_with_invalid_json_is_a_400_in_the_dialog_and_stays_pending(
    owner, owner_client, registry
):
    _, _, approval = parked(owner, registry)

    response = owner_client.post(
        decide_url(approval), {"decision": "modify", "arguments": '{"to": '}, headers=HTMX
    )

    html = response.content.decode()
    assert response.status_code == 400
    assert html.lstrip().startswith('<section id="approval"')
    assert "The arguments are not valid JSON" in html
    assert 'data-code="INVALID_ARGUMENTS"' in html
    assert "approval-dialog" in ids(html) and textarea_text(html) == '{"to": '
    assert Approval.objects.get(pk=approval.pk).status == "pending"


def test_modify_with_arguments_outside_the_schema_is_a_400_and_stays_pending(
    owner, owner_client, registry
):
    _, _, approval = parked(owner, registry)

    response = owner_client.post(
        decide_url(approval), {"decision": "modify", "arguments": '{"to": 5}'}, headers=HTMX
    )

    html = response.content.decode()
    assert response.status_code == 400
    assert "Invalid arguments for tool &#x27;send&#x27;" in html
    assert Approval.objects.get(pk=approval.pk).status == "pending"


def test_without_htmx_a_refused_edit_shows_the_run_page_with_the_dialog(
    owner, owner_client, registry
):
    run, _, approval = parked(owner, registry)

    response = owner_client.post(decide_url(approval), {"decision": "modify", "arguments": "[]"})

    html = response.content.decode()
    assert response.status_code == 400
    assert f"Run #{run.pk}" in html and "approval-dialog" in ids(html)
    assert "A modify decision needs `arguments`, a JSON object" in html


def test_an_unknown_decision_is_a_400(owner, owner_client, registry):
    _, _, approval = parked(owner, registry)

    response = owner_client.post(decide_url(approval), {"decision": "maybe"}, headers=HTMX)

    assert response.status_code == 400
    assert Approval.objects.get(pk=approval.pk).status == "pending"


def test_a_second_decision_is_a_409_saying_who_decided(owner, owner_client, staff, registry):
    _, _, approval = parked(owner, registry)
    approval_decide(approval_id=approval.pk, decision="approve", actor=staff, interface="api")

    response = owner_client.post(decide_url(approval), {"decision": "deny"}, headers=HTMX)

    html = response.content.decode()
    assert response.status_code == 409
    assert "already decided: approved by staff" in html
    assert "approval-dialog" not in ids(html)
    assert Approval.objects.get(pk=approval.pk).status == "approved"


def test_an_outsider_gets_404_and_the_approval_stays_pending(owner, outsider_client, registry):
    run, _, approval = parked(owner, registry)

    response = outsider_client.post(decide_url(approval), {"decision": "approve"})

    assert response.status_code == 404
    assert Approval.objects.get(pk=approval.pk).status == "pending"
    assert outsider_client.get(f"/runs/{run.pk}/").status_code == 404
    listing = outsider_client.get("/approvals/").content.decode()
    assert f"approval-{approval.pk}" not in ids(listing)
    assert "nav-count" not in listing


def test_a_missing_approval_is_a_404(owner_client):
    assert (
        owner_client.post("/approvals/999999/decide/", {"decision": "approve"}).status_code == 404
    )


def test_staff_can_decide_on_someone_elses_run(owner, staff, send, registry):
    run, provider, approval = parked(owner, registry)

    response = client_for(staff).post(decide_url(approval), {"decision": "approve"})

    assert response.status_code == 302 and response["Location"] == "/approvals/"
    approval.refresh_from_db()
    assert approval.status == "approved" and approval.decided_by == staff
    drive(run, provider, registry)
    assert run.status == "succeeded"


def test_a_decision_needs_the_csrf_token(owner, registry):
    _, _, approval = parked(owner, registry)
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)

    refused = client.post(decide_url(approval), {"decision": "approve"}, headers=HTMX)

    assert refused.status_code == 403
    assert Approval.objects.get(pk=approval.pk).status == "pending"
    page = client.get(f"/runs/{Approval.objects.get(pk=approval.pk).run_id}/")
    token = page.cookies["csrftoken"].value
    accepted = client.post(
        decide_url(approval), {"decision": "approve"}, headers={**HTMX, "X-CSRFToken": token}
    )
    assert accepted.status_code == 200


def test_a_decision_is_a_post(owner, owner_client, registry):
    _, _, approval = parked(owner, registry)

    assert owner_client.get(decide_url(approval)).status_code == 405


# --- the approvals page -----------------------------------------------------------------------

SHELL_SCRIPT = {
    **SCRIPT,
    "AGENTDESK:PLAN": [plan(step("look", ["shell"]))],
    "AGENTDESK:STEP 0": [{"tool_calls": [{"name": "shell", "arguments": {"command": "ls"}}]}],
}


def test_the_approvals_page_groups_what_waits_by_tool(owner, owner_client, registry):
    _, _, first = parked(owner, registry)
    _, _, second = parked(owner, registry)
    _, _, shell = parked(owner, registry, SHELL_SCRIPT)
    decided_run, _, decided = parked(owner, registry)
    approval_decide(approval_id=decided.pk, decision="deny", actor=owner, interface="web")

    html = owner_client.get("/approvals/").content.decode()

    send_group = html[html.index('id="approval-group-send"') : html.index("approval-group-shell")]
    assert "Approve all 2" in send_group
    assert f'id="approval-{first.pk}"' in send_group and f'id="approval-{second.pk}"' in send_group
    assert f'href="/runs/{first.run_id}/"' in send_group
    assert f'id="approval-{shell.pk}"' in html and "Approve all 1" in html
    decided_part = html[html.index('id="decided-approvals"') :]
    assert f'id="approval-{decided.pk}"' in decided_part and "denied" in decided_part
    assert '<span class="nav-count" title="3 waiting for you">3</span>' in html


def test_approve_all_decides_every_listed_call_of_the_tool(owner, owner_client, registry):
    first_run, _, first = parked(owner, registry)
    _, _, second = parked(owner, registry)
    _, _, shell = parked(owner, registry, SHELL_SCRIPT)

    response = owner_client.post(
        "/approvals/bulk/", {"tool": "send", "approval": [first.pk, second.pk]}, follow=True
    )

    assert "Approved 2 calls of send." in response.content.decode()
    statuses = dict(Approval.objects.values_list("pk", "status"))
    assert statuses == {first.pk: "approved", second.pk: "approved", shell.pk: "pending"}
    assert Run.objects.get(pk=first_run.pk).status == "running"
    decides = AuditEvent.objects.filter(action="approval.decide", interface="web")
    assert decides.count() == 2


def test_approve_all_leaves_a_call_that_arrived_after_the_page(owner, owner_client, registry):
    _, _, seen = parked(owner, registry)
    _, _, unseen = parked(owner, registry)

    owner_client.post("/approvals/bulk/", {"tool": "send", "approval": [seen.pk]})

    assert Approval.objects.get(pk=seen.pk).status == "approved"
    assert Approval.objects.get(pk=unseen.pk).status == "pending"


def test_approve_all_touches_only_your_own_approvals(owner, outsider, outsider_client, registry):
    _, _, approval = parked(owner, registry)

    outsider_client.post("/approvals/bulk/", {"tool": "send", "approval": [approval.pk]})

    assert Approval.objects.get(pk=approval.pk).status == "pending"


# --- settings: rules and YOLO -----------------------------------------------------------------


def test_the_settings_page_lists_your_rules(owner, outsider, owner_client):
    every = rule_create(
        owner_id=owner.pk, tool="send", arguments=None, actor=owner, interface="web"
    )
    exact = rule_create(
        owner_id=owner.pk, tool="post", arguments={"to": "ann"}, actor=owner, interface="api"
    )
    theirs = rule_create(
        owner_id=outsider.pk, tool="send", arguments=None, actor=outsider, interface="web"
    )

    html = owner_client.get("/settings/").content.decode()

    assert f"rule-{every.pk}" in ids(html) and f"rule-{exact.pk}" in ids(html)
    assert f"rule-{theirs.pk}" not in ids(html)
    assert "every call" in html and "this exact call" in html


def test_revoking_a_rule_deletes_it(owner, owner_client):
    rule = rule_create(owner_id=owner.pk, tool="send", arguments=None, actor=owner, interface="web")

    response = owner_client.post(f"/settings/rules/{rule.pk}/revoke/", follow=True)

    assert not ApprovalRule.objects.filter(pk=rule.pk).exists()
    assert "Revoked: send (every call) asks again." in response.content.decode()
    audit = AuditEvent.objects.get(action="approval_rule.revoke")
    assert audit.interface == "web"


def test_an_outsider_cannot_revoke_your_rule(owner, outsider_client):
    rule = rule_create(owner_id=owner.pk, tool="send", arguments=None, actor=owner, interface="web")

    assert outsider_client.post(f"/settings/rules/{rule.pk}/revoke/").status_code == 404
    assert ApprovalRule.objects.filter(pk=rule.pk).exists()


def test_without_the_permission_yolo_mode_cannot_be_turned_on(owner, owner_client):
    page = owner_client.get("/settings/").content.decode()
    assert "staff must grant you the permission" in page and "yolo-toggle" not in ids(page)

    response = owner_client.post("/settings/yolo/", {"yolo": "on"})

    assert response.status_code == 403
    assert "YOLO mode needs a permission only staff can grant" in response.content.decode()
    assert not UserPreferences.objects.filter(user=owner, yolo=True).exists()


def test_with_the_permission_yolo_mode_turns_on_and_off(owner, staff):
    yolo_grant(user=owner, granted=True, actor=staff, interface="admin")
    client = client_for(owner)
    assert "yolo-toggle" in ids(client.get("/settings/").content.decode())

    client.post("/settings/yolo/", {"yolo": "on"})
    assert UserPreferences.objects.get(user=owner).yolo

    client.post("/settings/yolo/", {"yolo": "off"})
    assert not UserPreferences.objects.get(user=owner).yolo


def test_the_yolo_banner_shows_on_every_page_only_while_it_is_on(owner, staff, owner_client):
    assert "yolo-banner" not in ids(owner_client.get("/").content.decode())

    yolo_grant(user=owner, granted=True, actor=staff, interface="admin")
    client = client_for(owner)  # a fresh user object: permissions are cached per object
    client.post("/settings/yolo/", {"yolo": "on"})

    for path in ("/", "/tasks/new/", "/approvals/", "/settings/"):
        html = client.get(path).content.decode()
        assert "YOLO mode is on: tool calls run without asking" in html, path
        assert by_id(html, "yolo-banner")
    assert 'href="/settings/"' in html


def test_the_yolo_banner_stays_off_once_the_permission_is_gone(owner, staff):
    UserPreferences.objects.create(user=owner, yolo=True)  # switched on, never granted

    html = client_for(owner).get("/").content.decode()

    assert "yolo-banner" not in ids(html)


def test_the_header_counts_and_the_banner_cost_one_query(
    owner, registry, rf, django_assert_num_queries
):
    parked(owner, registry)
    UserPreferences.objects.create(user=owner, yolo=False)
    request = rf.get("/")
    request.user = owner

    with django_assert_num_queries(1):
        shown = approvals(request)

    assert shown == {"approvals_pending": 1, "yolo_banner": False}


# --- the new-task form and the labels ---------------------------------------------------------


def test_the_task_form_passes_the_approval_options(owner, owner_client, llm_configured):
    response = owner_client.post(
        "/tasks/new/",
        {
            "task": "Send the note",
            "approve_plan": "on",
            "approval_timeout": "90",
            "approval_on_timeout": "skip",
        },
    )

    assert response.status_code == 302
    task = Task.objects.get()
    assert (task.approve_plan, task.approval_timeout, task.approval_on_timeout) == (
        True,
        90,
        "skip",
    )


def test_the_task_form_offers_the_approval_options(owner_client):
    html = owner_client.get("/tasks/new/").content.decode()

    assert "Show me the plan first" in html
    assert {"id_approve_plan", "id_approval_timeout", "id_approval_on_timeout"} <= set(ids(html))


def test_the_task_form_leaves_the_options_at_their_defaults(owner, owner_client, llm_configured):
    owner_client.post("/tasks/new/", {"task": "Send the note"})

    task = Task.objects.get()
    assert (task.approve_plan, task.approval_timeout, task.approval_on_timeout) == (
        False,
        None,
        "",
    )


def test_a_bad_timeout_is_shown_on_its_field(owner_client, llm_configured):
    response = owner_client.post("/tasks/new/", {"task": "Send", "approval_timeout": "0"})

    assert response.status_code == 400
    assert "id_approval_timeout_error" in ids(response.content.decode())
    assert not Task.objects.exists()


def test_the_dashboard_labels_a_waiting_run(owner, owner_client, registry):
    run, _, _ = parked(owner, registry)

    html = owner_client.get("/").content.decode()

    row = html[html.index(f'id="run-row-{run.pk}"') :]
    assert '<span class="badge" data-status="waiting_approval">waiting for approval</span>' in row
    assert "Waiting for your approval" not in html  # the card lives on the run page
    progress = owner_client.get(f"/runs/{run.pk}/").content.decode()
    assert "waiting for your approval" in progress
