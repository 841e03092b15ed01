"""The YOLO banner, the header's approval count, and the dashboard's label of a waiting run."""

import pytest

from agents_app.approvals.rules import yolo_grant
from agents_app.models import UserPreferences
from agents_app.web.context_processors import approvals
from tests.support.approvals import parked
from tests.support.clients import logged_in
from tests.support.markup import by_id, ids

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_yolo_banner_shows_on_every_page_only_while_it_is_on(owner, staff, owner_session):
    owner_client = owner_session
    assert "yolo-banner" not in ids(owner_client.get("/").content.decode())

    yolo_grant(user=owner, granted=True, actor=staff, interface="admin")
    client = logged_in(owner)  # a fresh user object: permissions are cached per object
    client.post("/settings/yolo/", {"yolo": "on", "confirm": "yes"})

    for path in ("/", "/tasks/new/", "/approvals/", "/settings/"):
        html = client.get(path).content.decode()
        assert "YOLO mode is on: tool calls run without asking" in html, path
        assert by_id(html, "yolo-banner")
    assert 'href="/settings/"' in html


def test_the_yolo_banner_stays_off_once_the_permission_is_gone(owner, staff):
    UserPreferences.objects.create(user=owner, yolo=True)  # switched on, never granted

    html = logged_in(owner).get("/").content.decode()

    assert "yolo-banner" not in ids(html)


@pytest.mark.dialect
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


def test_the_dashboard_labels_a_waiting_run(owner, owner_session, registry):
    run, _, _ = parked(owner, registry)

    html = owner_session.get("/").content.decode()

    row = html[html.index(f'id="run-row-{run.pk}"') :]
    assert '<span class="badge" data-status="waiting_approval">waiting for approval</span>' in row
    assert "Waiting for your approval" not in html  # the card lives on the run page
    progress = owner_session.get(f"/runs/{run.pk}/").content.decode()
    assert "waiting for your approval" in progress
