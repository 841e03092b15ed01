"""Approvals, rules and YOLO mode in the admin: read-only rows, every act through the audited
decision services with interface `admin` and the staff member as actor."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client

from agents_app.approvals.policy import YOLO_PERMISSION, yolo_active
from agents_app.approvals.rules import rule_create, yolo_set
from agents_app.models import (
    Approval,
    ApprovalRule,
    AuditEvent,
    Run,
    RunStatus,
    UserPreferences,
)
from agents_app.runs.writer import locked_run
from tests.support.runs import make_run

APPROVALS = "/admin/agents_app/approval/"
RULES = "/admin/agents_app/approvalrule/"
USERS = "/admin/auth/user/"


def parked(owner, tool="write_file", arguments=None) -> Approval:
    """A run waiting on a call, as the worker leaves it. The test database is not committed,
    so the run a decision queues again is never sent to a broker."""
    run = make_run(owner)
    with locked_run(run.pk) as w:
        w.transition(RunStatus.PLANNING)
        w.transition(RunStatus.RUNNING)
        approval = Approval.objects.create(
            run=run,
            owner=owner,
            tool=tool,
            arguments=arguments or {"path": "notes.md", "content": "hi"},
            risk="workspace_write",
            level="moderate",
            reason="moderate: no rule of yours allows it",
        )
        w.transition(RunStatus.WAITING_APPROVAL, approval_id=approval.pk)
    return approval


def act(client, url, action, *pks):
    response = client.post(url, {"action": action, "_selected_action": list(pks)}, follow=True)
    assert response.status_code == 200
    return [(m.level_tag, m.message) for m in response.context["messages"]]


def decisions_of(approval):
    return list(
        AuditEvent.objects.filter(
            action="approval.decide", details__approval_id=approval.pk
        ).values_list("interface", "actor_label", "details__decision")
    )


@pytest.mark.parametrize(
    ("action", "decision", "status", "run_status"),
    [
        ("approve_selected", "approve", "approved", "running"),
        ("deny_selected", "deny", "denied", "running"),
        ("skip_selected", "skip", "skipped", "running"),
        ("cancel_selected", "cancel", "cancelled", "cancelled"),
    ],
)
def test_each_action_decides_and_audits_as_the_staff_member_in_the_admin(
    superuser_admin, superuser, owner, action, decision, status, run_status
):
    staff = superuser
    approval = parked(owner)

    notes = act(superuser_admin, APPROVALS, action, approval.pk)

    approval.refresh_from_db()
    assert (approval.status, approval.decided_by, approval.decided_via) == (status, staff, "admin")
    assert Run.objects.get(pk=approval.run_id).status == run_status
    assert decisions_of(approval) == [("admin", "staff", decision)]
    [(level, text)] = notes
    assert level == "success" and f"#{approval.pk}" in text


def test_a_second_action_reports_the_conflict_and_does_not_decide_again(superuser_admin, owner):
    first, second = parked(owner), parked(owner)
    act(superuser_admin, APPROVALS, "approve_selected", first.pk)

    notes = act(superuser_admin, APPROVALS, "deny_selected", first.pk, second.pk)

    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, second.status) == ("approved", "denied")
    assert decisions_of(first) == [("admin", "staff", "approve")]
    assert notes[0] == ("success", f"Denied 1 approval(s): #{second.pk}.")
    level, text = notes[1]
    assert level == "warning" and "already decided: approved by staff" in text


def test_a_plan_cannot_be_skipped_and_says_why(superuser_admin, owner):
    approval = parked(owner)
    Approval.objects.filter(pk=approval.pk).update(kind="plan", tool="")

    notes = act(superuser_admin, APPROVALS, "skip_selected", approval.pk)

    approval.refresh_from_db()
    assert approval.status == "pending" and decisions_of(approval) == []
    assert notes == [
        (
            "error",
            f"#{approval.pk}: A plan is approved, edited (modify), rejected with feedback "
            "(deny) or its run cancelled",
        )
    ]


def test_the_list_shows_filters_searches_and_links_each_run(superuser_admin, owner, outsider):
    mine = parked(owner, tool="write_file")
    parked(outsider, tool="http_get", arguments={"url": "https://example.org"})

    listing = superuser_admin.get(APPROVALS)
    by_tool = superuser_admin.get(APPROVALS, {"q": "write_file"})
    by_owner = superuser_admin.get(APPROVALS, {"q": "outsider"})

    assert listing.status_code == 200
    html = listing.content.decode()
    assert f'href="/admin/agents_app/run/{mine.run_id}/change/"' in html
    titles = [spec.title for spec in listing.context["cl"].filter_specs]
    assert titles == ["status", "kind", "risk", "level", "decided via"]
    assert [a.tool for a in by_tool.context["cl"].result_list] == ["write_file"]
    assert [a.tool for a in by_owner.context["cl"].result_list] == ["http_get"]


def test_approvals_cannot_be_added_edited_or_deleted(superuser_admin, owner):
    staff_client = superuser_admin
    approval = parked(owner)
    page = f"{APPROVALS}{approval.pk}/change/"

    listing = staff_client.get(APPROVALS).content.decode()
    shown = staff_client.get(page)

    assert f"{APPROVALS}add/" not in listing and "delete_selected" not in listing
    assert shown.status_code == 200
    assert 'name="_save"' not in shown.content.decode() and "notes.md" in shown.content.decode()
    assert staff_client.get(f"{APPROVALS}add/").status_code == 403
    assert staff_client.post(page, {"status": "approved"}).status_code == 403
    assert (
        staff_client.post(f"{APPROVALS}{approval.pk}/delete/", {"post": "yes"}).status_code == 403
    )
    approval.refresh_from_db()
    assert approval.status == "pending"


def test_staff_who_may_only_view_approvals_get_no_decide_actions(db, owner):
    clerk = get_user_model().objects.create_user("clerk", is_staff=True)
    clerk.user_permissions.add(Permission.objects.get(codename="view_approval"))
    client = Client()
    client.force_login(clerk)
    approval = parked(owner)

    listing = client.get(APPROVALS)
    client.post(APPROVALS, {"action": "approve_selected", "_selected_action": [approval.pk]})

    assert listing.status_code == 200 and "approve_selected" not in listing.content.decode()
    approval.refresh_from_db()
    assert approval.status == "pending"


@pytest.mark.parametrize("path", [APPROVALS, RULES, USERS])
def test_a_non_staff_user_is_sent_to_the_admin_login(owner, path):
    client = Client()
    client.force_login(owner)

    response = client.get(path)

    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def test_a_non_staff_user_cannot_decide_through_the_admin(owner):
    approval = parked(owner)
    client = Client()
    client.force_login(owner)

    response = client.post(
        APPROVALS, {"action": "approve_selected", "_selected_action": [approval.pk]}
    )

    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    approval.refresh_from_db()
    assert approval.status == "pending"


def make_rule(owner, tool="write_file", arguments=None):
    return rule_create(
        owner_id=owner.pk, tool=tool, arguments=arguments, actor=owner, interface="web"
    )


def revokes():
    return list(
        AuditEvent.objects.filter(action="approval_rule.revoke").values_list(
            "interface", "actor_label", "target", "details__rule_id"
        )
    )


def test_deleting_a_rule_from_its_page_revokes_it_audited(superuser_admin, owner):
    rule = make_rule(owner)

    response = superuser_admin.post(f"{RULES}{rule.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert not ApprovalRule.objects.exists()
    assert revokes() == [("admin", "staff", "write_file", rule.pk)]


def test_deleting_rules_in_bulk_revokes_each_audited(superuser_admin, owner):
    every = make_rule(owner)
    exact = make_rule(owner, "http_get", {"url": "https://example.org"})

    response = superuser_admin.post(
        RULES,
        {"action": "delete_selected", "_selected_action": [every.pk, exact.pk], "post": "yes"},
    )

    assert response.status_code == 302
    assert not ApprovalRule.objects.exists()
    assert sorted(revokes()) == sorted(
        [("admin", "staff", "write_file", every.pk), ("admin", "staff", "http_get", exact.pk)]
    )


def test_rules_cannot_be_added_or_edited(superuser_admin, owner):
    staff_client = superuser_admin
    rule = make_rule(owner)

    shown = staff_client.get(f"{RULES}{rule.pk}/change/")

    assert staff_client.get(f"{RULES}add/").status_code == 403
    assert shown.status_code == 200 and 'name="_save"' not in shown.content.decode()
    assert "every call" in shown.content.decode()


def yolo_acts():
    return list(
        AuditEvent.objects.filter(action__startswith="yolo.")
        .order_by("pk")
        .values_list("action", "interface", "actor_label", "target")
    )


def fresh(user):
    return get_user_model().objects.get(pk=user.pk)


def test_granting_yolo_mode_lets_the_user_turn_it_on_audited(superuser_admin, owner):
    notes = act(superuser_admin, USERS, "grant_yolo", owner.pk)

    assert fresh(owner).has_perm(YOLO_PERMISSION)
    assert yolo_acts() == [("yolo.grant", "admin", "staff", "owner")]
    assert notes[0][0] == "success" and "owner" in notes[0][1]
    yolo_set(user=fresh(owner), on=True, interface="web")
    assert yolo_active(fresh(owner))


def test_revoking_yolo_mode_turns_it_off_audited(superuser_admin, owner):
    act(superuser_admin, USERS, "grant_yolo", owner.pk)
    yolo_set(user=fresh(owner), on=True, interface="web")

    act(superuser_admin, USERS, "revoke_yolo", owner.pk)

    assert not fresh(owner).has_perm(YOLO_PERMISSION)
    assert UserPreferences.objects.get(user=owner).yolo is False
    assert not yolo_active(fresh(owner))
    assert [a for a in yolo_acts() if a[1] == "admin"] == [
        ("yolo.grant", "admin", "staff", "owner"),
        ("yolo.revoke", "admin", "staff", "owner"),
    ]


def test_revoking_from_a_superuser_warns_they_still_hold_it(superuser_admin, superuser):
    notes = act(superuser_admin, USERS, "revoke_yolo", superuser.pk)

    assert notes[-1][0] == "warning" and "staff" in notes[-1][1]


def test_the_user_list_shows_who_may_use_yolo_mode_and_who_has_it_on(
    superuser_admin, owner, outsider
):
    act(superuser_admin, USERS, "grant_yolo", owner.pk)
    yolo_set(user=fresh(owner), on=True, interface="web")

    listing = superuser_admin.get(USERS)

    rows = {
        u.username: (u.yolo_granted, u.yolo_switched_on) for u in listing.context["cl"].result_list
    }
    assert rows["owner"] == (True, True)
    assert rows["outsider"] == (False, False)
    html = listing.content.decode()
    assert "YOLO allowed" in html and "YOLO on" in html
