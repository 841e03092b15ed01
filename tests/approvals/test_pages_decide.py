"""Deciding through the web (each decision then continued in-process): HTMX, refusals, access."""

import pytest
from django.test import Client

from agents_app.approvals.decisions import approval_decide
from agents_app.models import Approval, ApprovalRule, Step, ToolCall
from tests.support.approvals import HTMX, decide_url, drive, parked, textarea_text
from tests.support.clients import logged_in
from tests.support.markup import by_id, ids

pytestmark = pytest.mark.django_db(transaction=True)


def test_approve_runs_the_call_and_the_card_goes(owner, owner_session, send, registry):
    run, provider, approval = parked(owner, registry)

    response = owner_session.post(decide_url(approval), {"decision": "approve"}, headers=HTMX)

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


def test_a_decision_from_the_approvals_queue_swaps_in_no_run_status_it_has_no_place_for(
    owner, owner_session, send, registry
):
    _, _, approval = parked(owner, registry)
    headers = {**HTMX, "HX-Current-URL": "http://testserver/approvals/"}

    response = owner_session.post(decide_url(approval), {"decision": "approve"}, headers=headers)

    assert response.status_code == 200
    assert "run-status" not in ids(response.content.decode())
    _, _, second = parked(owner, registry)
    headers = {**HTMX, "HX-Current-URL": f"http://testserver/runs/{second.run_id}/"}
    response = owner_session.post(decide_url(second), {"decision": "approve"}, headers=headers)
    assert by_id(response.content.decode(), "run-status")["data-status"] == "running"


def test_without_htmx_a_decision_returns_to_the_run_page(owner, owner_session, registry):
    run, _, approval = parked(owner, registry)

    response = owner_session.post(decide_url(approval), {"decision": "approve"})

    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"


def test_modify_runs_the_edited_arguments(owner, owner_session, send, registry):
    run, provider, approval = parked(owner, registry)

    response = owner_session.post(
        decide_url(approval),
        {"decision": "modify", "arguments": '{"to": "bob", "text": "hello"}'},
        headers=HTMX,
    )

    assert response.status_code == 200
    drive(run, provider, registry)
    assert run.status == "succeeded" and send.calls == [{"to": "bob", "text": "hello"}]
    assert Approval.objects.get(pk=approval.pk).status == "modified"


def test_approve_ignores_the_arguments_box(owner, owner_session, send, registry):
    run, provider, approval = parked(owner, registry)

    owner_session.post(
        decide_url(approval), {"decision": "approve", "arguments": "{not json"}, headers=HTMX
    )

    drive(run, provider, registry)
    assert send.calls == [{"to": "ann", "text": "hi"}]


def test_skip_skips_the_step(owner, owner_session, send, registry):
    run, provider, approval = parked(owner, registry)

    owner_session.post(decide_url(approval), {"decision": "skip"}, headers=HTMX)

    drive(run, provider, registry)
    assert send.calls == []
    assert Step.objects.get(run=run, index=0).status == "skipped"
    assert ToolCall.objects.get(run=run).status == "skipped"


def test_deny_lets_the_step_go_on_without_the_call(owner, owner_session, send, registry):
    run, provider, approval = parked(owner, registry)

    owner_session.post(decide_url(approval), {"decision": "deny", "remember": "tool"}, headers=HTMX)

    drive(run, provider, registry)
    assert run.status == "succeeded" and send.calls == []
    assert ToolCall.objects.get(run=run).status == "denied"
    assert not ApprovalRule.objects.exists()  # `remember` goes with approve only


def test_cancel_ends_the_run_at_once(owner, owner_session, send, registry):
    run, _, approval = parked(owner, registry)

    response = owner_session.post(decide_url(approval), {"decision": "cancel"}, headers=HTMX)

    run.refresh_from_db()
    assert run.status == "cancelled" and send.calls == []
    assert by_id(response.content.decode(), "run-status")["data-status"] == "cancelled"


def test_approve_and_always_allow_adds_a_rule(owner, owner_session, registry):
    _, _, approval = parked(owner, registry)

    owner_session.post(decide_url(approval), {"decision": "approve", "remember": "tool"})

    rule = ApprovalRule.objects.get(owner=owner)
    assert (rule.tool, rule.is_exact, rule.created_via) == ("send", False, "web")


def test_modify_with_invalid_json_is_a_400_in_the_dialog_and_stays_pending(
    owner, owner_session, registry
):
    _, _, approval = parked(owner, registry)

    response = owner_session.post(
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
    owner, owner_session, registry
):
    _, _, approval = parked(owner, registry)

    response = owner_session.post(
        decide_url(approval), {"decision": "modify", "arguments": '{"to": 5}'}, headers=HTMX
    )

    html = response.content.decode()
    assert response.status_code == 400
    assert "Invalid arguments for tool &#x27;send&#x27;" in html
    assert Approval.objects.get(pk=approval.pk).status == "pending"


def test_without_htmx_a_refused_edit_shows_the_run_page_with_the_dialog(
    owner, owner_session, registry
):
    run, _, approval = parked(owner, registry)

    response = owner_session.post(decide_url(approval), {"decision": "modify", "arguments": "[]"})

    html = response.content.decode()
    assert response.status_code == 400
    assert f"Run #{run.pk}" in html and "approval-dialog" in ids(html)
    assert "A modify decision needs `arguments`, a JSON object" in html


def test_an_unknown_decision_is_a_400(owner, owner_session, registry):
    _, _, approval = parked(owner, registry)

    response = owner_session.post(decide_url(approval), {"decision": "maybe"}, headers=HTMX)

    assert response.status_code == 400
    assert Approval.objects.get(pk=approval.pk).status == "pending"


def test_a_second_decision_is_a_409_saying_who_decided(owner, owner_session, staff, registry):
    _, _, approval = parked(owner, registry)
    approval_decide(approval_id=approval.pk, decision="approve", actor=staff, interface="api")

    response = owner_session.post(decide_url(approval), {"decision": "deny"}, headers=HTMX)

    html = response.content.decode()
    assert response.status_code == 409
    assert "already decided: approved by staff" in html
    assert "approval-dialog" not in ids(html)
    assert Approval.objects.get(pk=approval.pk).status == "approved"


def test_an_outsider_gets_404_and_the_approval_stays_pending(owner, outsider_session, registry):
    outsider_client = outsider_session
    run, _, approval = parked(owner, registry)

    response = outsider_client.post(decide_url(approval), {"decision": "approve"})

    assert response.status_code == 404
    assert Approval.objects.get(pk=approval.pk).status == "pending"
    assert outsider_client.get(f"/runs/{run.pk}/").status_code == 404
    listing = outsider_client.get("/approvals/").content.decode()
    assert f"approval-{approval.pk}" not in ids(listing)
    assert '<span id="nav-approvals-count" class="nav-count"></span>' in listing  # none


def test_a_missing_approval_is_a_404(owner_session):
    owner_client = owner_session
    assert (
        owner_client.post("/approvals/999999/decide/", {"decision": "approve"}).status_code == 404
    )


def test_staff_can_decide_on_someone_elses_run(owner, staff, send, registry):
    run, provider, approval = parked(owner, registry)

    response = logged_in(staff).post(decide_url(approval), {"decision": "approve"})

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


def test_a_decision_is_a_post(owner, owner_session, registry):
    owner_client = owner_session
    _, _, approval = parked(owner, registry)

    assert owner_client.get(decide_url(approval)).status_code == 405
