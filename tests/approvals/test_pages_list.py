"""The approvals page: what waits, grouped by tool, and its approve-all button."""

import pytest
from django.test import Client

from agents_app.approvals.decisions import approval_decide
from agents_app.models import Approval, AuditEvent, Run
from tests.support.approvals import SCRIPT, parked
from tests.support.script import plan_reply, step, tool_call

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("path", ["/approvals/", "/settings/"])
def test_the_pages_send_an_anonymous_visitor_to_the_login_page(db, path):
    response = Client().get(path)

    assert response.status_code == 302 and response["Location"] == f"/login/?next={path}"


SHELL_SCRIPT = [
    {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("look", ["shell"]))]},
    {"match": "AGENTDESK:STEP 0", "replies": [tool_call("shell", command="ls")]},
    *SCRIPT,
]


def test_the_approvals_page_groups_what_waits_by_tool(owner, owner_session, registry):
    _, _, first = parked(owner, registry)
    _, _, second = parked(owner, registry)
    _, _, shell = parked(owner, registry, SHELL_SCRIPT)
    decided_run, _, decided = parked(owner, registry)
    approval_decide(approval_id=decided.pk, decision="deny", actor=owner, interface="web")

    html = owner_session.get("/approvals/").content.decode()

    send_group = html[html.index('id="approval-group-send"') : html.index("approval-group-shell")]
    assert "Approve all 2" in send_group
    assert f'id="approval-{first.pk}"' in send_group and f'id="approval-{second.pk}"' in send_group
    assert f'href="/runs/{first.run_id}/"' in send_group
    assert f'id="approval-{shell.pk}"' in html and "Approve all 1" in html
    decided_part = html[html.index('id="decided-approvals"') :]
    assert f'id="approval-{decided.pk}"' in decided_part and "denied" in decided_part
    assert (
        '<span id="nav-approvals-count" class="nav-count" title="3 waiting for you">3</span>'
        in html
    )


@pytest.mark.dialect
def test_approve_all_decides_every_listed_call_of_the_tool(owner, owner_session, registry):
    first_run, _, first = parked(owner, registry)
    _, _, second = parked(owner, registry)
    _, _, shell = parked(owner, registry, SHELL_SCRIPT)

    response = owner_session.post(
        "/approvals/bulk/", {"tool": "send", "approval": [first.pk, second.pk]}, follow=True
    )

    assert "Approved 2 calls of send." in response.content.decode()
    statuses = dict(Approval.objects.values_list("pk", "status"))
    assert statuses == {first.pk: "approved", second.pk: "approved", shell.pk: "pending"}
    assert Run.objects.get(pk=first_run.pk).status == "running"
    decides = AuditEvent.objects.filter(action="approval.decide", interface="web")
    assert decides.count() == 2


@pytest.mark.dialect
def test_approve_all_leaves_a_call_that_arrived_after_the_page(owner, owner_session, registry):
    _, _, seen = parked(owner, registry)
    _, _, unseen = parked(owner, registry)

    owner_session.post("/approvals/bulk/", {"tool": "send", "approval": [seen.pk]})

    assert Approval.objects.get(pk=seen.pk).status == "approved"
    assert Approval.objects.get(pk=unseen.pk).status == "pending"


def test_approve_all_touches_only_your_own_approvals(owner, outsider, outsider_session, registry):
    _, _, approval = parked(owner, registry)

    outsider_session.post("/approvals/bulk/", {"tool": "send", "approval": [approval.pk]})

    assert Approval.objects.get(pk=approval.pk).status == "pending"


@pytest.mark.parametrize(("decision", "status"), [("approve", "approved"), ("deny", "denied")])
def test_a_row_of_the_queue_is_decided_from_the_queue(
    owner, owner_session, registry, decision, status
):
    _, _, first = parked(owner, registry)
    _, _, second = parked(owner, registry)
    html = owner_session.get("/approvals/").content.decode()
    row = html[html.index(f'id="approval-{first.pk}"') : html.index(f'id="approval-{second.pk}"')]
    assert f'action="/approvals/{first.pk}/decide/"' in row
    assert 'value="approve"' in row and 'value="deny"' in row

    response = owner_session.post(
        f"/approvals/{first.pk}/decide/", {"decision": decision, "back": "queue"}
    )

    assert response.status_code == 302 and response["Location"] == "/approvals/"
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, second.status) == (status, "pending")
    page = owner_session.get("/approvals/").content.decode()
    assert f"{status.capitalize()}: send on run #{first.run_id}." in page
    waiting = page[: page.index('id="decided-approvals"')]
    assert f'id="approval-{first.pk}"' not in waiting and f'id="approval-{second.pk}"' in waiting
