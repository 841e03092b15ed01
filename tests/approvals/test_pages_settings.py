"""The settings page: your approval rules and turning YOLO mode on and off."""

import pytest

from agents_app.approvals.rules import rule_create, yolo_grant
from agents_app.models import ApprovalRule, AuditEvent, UserPreferences
from tests.support.clients import logged_in
from tests.support.markup import ids

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_settings_page_lists_your_rules(owner, outsider, owner_session):
    every = rule_create(
        owner_id=owner.pk, tool="send", arguments=None, actor=owner, interface="web"
    )
    exact = rule_create(
        owner_id=owner.pk, tool="post", arguments={"to": "ann"}, actor=owner, interface="api"
    )
    theirs = rule_create(
        owner_id=outsider.pk, tool="send", arguments=None, actor=outsider, interface="web"
    )

    html = owner_session.get("/settings/").content.decode()

    assert f"rule-{every.pk}" in ids(html) and f"rule-{exact.pk}" in ids(html)
    assert f"rule-{theirs.pk}" not in ids(html)
    assert "every call" in html and "this exact call" in html


def test_revoking_a_rule_deletes_it(owner, owner_session):
    rule = rule_create(owner_id=owner.pk, tool="send", arguments=None, actor=owner, interface="web")

    response = owner_session.post(f"/settings/rules/{rule.pk}/revoke/", follow=True)

    assert not ApprovalRule.objects.filter(pk=rule.pk).exists()
    assert "Revoked: send (every call) asks again." in response.content.decode()
    audit = AuditEvent.objects.get(action="approval_rule.revoke")
    assert audit.interface == "web"


def test_an_outsider_cannot_revoke_your_rule(owner, outsider_session):
    outsider_client = outsider_session
    rule = rule_create(owner_id=owner.pk, tool="send", arguments=None, actor=owner, interface="web")

    assert outsider_client.post(f"/settings/rules/{rule.pk}/revoke/").status_code == 404
    assert ApprovalRule.objects.filter(pk=rule.pk).exists()


def test_without_the_permission_yolo_mode_cannot_be_turned_on(owner, owner_session):
    page = owner_session.get("/settings/").content.decode()
    assert "staff must grant you the permission" in page and "yolo-toggle" not in ids(page)

    response = owner_session.post("/settings/yolo/", {"yolo": "on", "confirm": "yes"})

    assert response.status_code == 403
    assert "YOLO mode needs a permission only staff can grant" in response.content.decode()
    assert not UserPreferences.objects.filter(user=owner, yolo=True).exists()


def test_with_the_permission_yolo_mode_turns_on_and_off(owner, staff):
    yolo_grant(user=owner, granted=True, actor=staff, interface="admin")
    client = logged_in(owner)
    assert "yolo-toggle" in ids(client.get("/settings/").content.decode())

    client.post("/settings/yolo/", {"yolo": "on", "confirm": "yes"})
    assert UserPreferences.objects.get(user=owner).yolo

    client.post("/settings/yolo/", {"yolo": "off"})
    assert not UserPreferences.objects.get(user=owner).yolo


def test_yolo_mode_turns_on_only_when_confirmed_and_then_says_so_once(owner, staff):
    yolo_grant(user=owner, granted=True, actor=staff, interface="admin")
    client = logged_in(owner)
    page = client.get("/settings/").content.decode()
    assert 'name="confirm" value="yes" id="yolo-confirm" required' in page

    refused = client.post("/settings/yolo/", {"yolo": "on"})

    assert refused.status_code == 400
    assert "Tick the box to confirm" in refused.content.decode()
    assert not UserPreferences.objects.filter(user=owner, yolo=True).exists()

    shown = client.post("/settings/yolo/", {"yolo": "on", "confirm": "yes"}, follow=True)

    assert UserPreferences.objects.get(user=owner).yolo
    assert shown.content.decode().count("YOLO mode is on") == 1
