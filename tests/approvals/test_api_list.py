"""The approvals REST API: listing (filters, paging, queries), reading one approval, outsiders."""

import pytest
from django.test import Client

from agents_app.approvals.presenters import approval_payload
from agents_app.models import Approval, AuditEvent
from tests.support.api import assert_error
from tests.support.approvals import APPROVALS, as_json, decide, ids, parked, pending

pytestmark = pytest.mark.django_db(transaction=True)


# --- the list ---------------------------------------------------------------------------------


@pytest.mark.dialect
def test_the_list_holds_only_the_callers_approvals_newest_first(
    owner, outsider, owner_api, outsider_api
):
    outsider_client = outsider_api
    older = pending(owner, minutes_ago=5)
    newer = pending(owner, minutes_ago=1)
    theirs = pending(outsider)

    body = owner_api.get(APPROVALS).json()

    assert body["success"] is True
    assert (body["count"], body["page"], body["page_size"]) == (2, 1, 20)
    assert ids(body["results"]) == [newer.pk, older.pk]
    assert ids(outsider_client.get(APPROVALS).json()["results"]) == [theirs.pk]


def test_the_list_shows_each_approval_as_its_payload(owner, owner_api, registry):
    _, _, approval = parked(owner, registry)

    [item] = owner_api.get(APPROVALS).json()["results"]

    assert item == as_json(approval_payload(approval))
    assert item["step_index"] == 0 and item["tool_call_id"] is not None


@pytest.mark.dialect
def test_the_list_filters_by_status_run_and_tool(owner, owner_api):
    send = pending(owner, minutes_ago=3)
    shell = pending(owner, tool="shell", minutes_ago=2)
    denied = pending(owner, minutes_ago=1, status="denied")

    def listed(query):
        return ids(owner_api.get(f"{APPROVALS}?{query}").json()["results"])

    assert listed("status=pending") == [shell.pk, send.pk]
    assert listed("status=denied") == [denied.pk]
    assert listed(f"run_id={send.run_id}") == [send.pk]
    assert listed("tool=shell") == [shell.pk]
    assert listed("status=pending&tool=send") == [send.pk]


@pytest.mark.dialect
def test_the_list_pages_like_the_runs(owner, owner_api):
    made = [pending(owner, minutes_ago=10 - i) for i in range(5)]
    newest_first = [a.pk for a in reversed(made)]

    body = owner_api.get(f"{APPROVALS}?page=2&page_size=2").json()
    last = owner_api.get(f"{APPROVALS}?page=3&page_size=2").json()

    assert (body["count"], body["page"], body["page_size"]) == (5, 2, 2)
    assert ids(body["results"]) == newest_first[2:4]
    assert ids(last["results"]) == newest_first[4:]


@pytest.mark.parametrize(
    "query", ["status=waiting", "status=PENDING", "page=0", "page_size=0", "page_size=101"]
)
def test_the_list_refuses_bad_query_values(owner_api, query):
    assert_error(owner_api.get(f"{APPROVALS}?{query}"), 400, "VALIDATION_ERROR")


@pytest.mark.dialect
def test_the_list_costs_the_same_queries_however_long(
    owner, owner_api, registry, django_assert_max_num_queries
):
    for _ in range(3):
        _, _, approval = parked(owner, registry)
    Approval.objects.filter(pk=approval.pk).update(status="approved", decided_by=owner)
    owner_api.get(APPROVALS)  # the key's first use writes last_used_at

    with django_assert_max_num_queries(3):
        body = owner_api.get(APPROVALS).json()

    assert body["count"] == 3 and body["results"][0]["decided_by"] == "owner"


def test_an_anonymous_client_cannot_list_approvals(db):
    assert_error(Client(enforce_csrf_checks=True).get(APPROVALS), 401, "UNAUTHORIZED")


# --- one approval -----------------------------------------------------------------------------


def test_the_owner_reads_an_approval(owner, owner_api):
    approval = pending(owner)

    response = owner_api.get(f"{APPROVALS}/{approval.pk}")

    assert response.status_code == 200
    assert response.json() == as_json(approval_payload(approval))


def test_an_outsider_hears_404_for_another_users_approval(owner, outsider_api):
    approval = pending(owner)

    error = assert_error(outsider_api.get(f"{APPROVALS}/{approval.pk}"), 404, "NOT_FOUND")
    assert_error(decide(outsider_api, approval.pk, decision="approve"), 404, "NOT_FOUND")

    assert "not found" in error["message"]
    approval.refresh_from_db()
    assert approval.status == "pending" and approval.decided_by is None
    assert not AuditEvent.objects.filter(action="approval.decide").exists()


def test_an_unknown_approval_is_404(owner_api):
    assert_error(owner_api.get(f"{APPROVALS}/999999"), 404, "NOT_FOUND")
    assert_error(decide(owner_api, 999999, decision="approve"), 404, "NOT_FOUND")
