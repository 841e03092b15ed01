"""The approvals REST API: bulk decisions by tool or by ids."""

import pytest

from agents_app.models import Approval, AuditEvent
from tests.support.api import assert_error, post_json
from tests.support.approvals import drive, ids, parked, pending

pytestmark = pytest.mark.django_db(transaction=True)

BULK = "/api/v1/approvals/bulk"


@pytest.mark.dialect
def test_bulk_by_tool_decides_only_the_callers_pending_calls_of_that_tool(
    owner, outsider, owner_api, send, registry
):
    first_run, provider, first = parked(owner, registry)
    _, _, second = parked(owner, registry)
    shell = pending(owner, tool="shell")
    done = pending(owner, status="denied")
    theirs = pending(outsider)

    response = post_json(owner_api, BULK, {"decision": "approve", "tool": "send"})

    assert response.status_code == 200
    body = response.json()
    assert sorted(ids(body["decided"])) == sorted([first.pk, second.pk])
    assert {a["status"] for a in body["decided"]} == {"approved"}
    assert body["refused"] == []
    statuses = dict(Approval.objects.values_list("pk", "status"))
    assert statuses[shell.pk] == "pending" and statuses[theirs.pk] == "pending"
    assert statuses[done.pk] == "denied"
    drive(first_run, provider, registry)
    assert first_run.status == "succeeded" and len(send.calls) == 1
    assert AuditEvent.objects.filter(action="approval.decide", interface="api").count() == 2


@pytest.mark.dialect
def test_bulk_by_ids_reports_each_one_it_cannot_decide(owner, outsider, owner_api):
    mine = pending(owner)
    decided = pending(owner, status="approved")
    theirs = pending(outsider)

    body = post_json(
        owner_api,
        BULK,
        {"decision": "deny", "ids": [mine.pk, theirs.pk, decided.pk, 999999, mine.pk]},
    ).json()

    assert ids(body["decided"]) == [mine.pk]
    assert [(r["id"], r["code"]) for r in body["refused"]] == [
        (theirs.pk, "NOT_FOUND"),
        (decided.pk, "CONFLICT"),
        (999999, "NOT_FOUND"),
    ]
    theirs.refresh_from_db()
    assert theirs.status == "pending"


def test_staff_bulk_decide_another_users_approvals_by_id(owner, staff_api):
    approval = pending(owner)

    body = post_json(staff_api, BULK, {"decision": "skip", "ids": [approval.pk]}).json()

    assert ids(body["decided"]) == [approval.pk] and body["refused"] == []
    approval.refresh_from_db()
    assert approval.status == "skipped"


@pytest.mark.parametrize(
    "body",
    [
        {"decision": "approve"},
        {"decision": "approve", "tool": "send", "ids": [1]},
        {"decision": "approve", "tool": ""},
        {"decision": "modify", "tool": "send"},
        {"decision": "yes", "tool": "send"},
        {"decision": "approve", "ids": "1,2"},
        {"decision": "approve", "ids": list(range(1, 1002))},
    ],
)
def test_a_bad_bulk_body_is_refused(owner, owner_api, body):
    approval = pending(owner)

    assert_error(post_json(owner_api, BULK, body), 400, "VALIDATION_ERROR")

    approval.refresh_from_db()
    assert approval.status == "pending"


@pytest.mark.dialect
def test_bulk_accepts_a_thousand_ids(owner_api):
    body = post_json(owner_api, BULK, {"decision": "deny", "ids": list(range(1, 1001))}).json()

    assert body["decided"] == [] and len(body["refused"]) == 1000
