"""The audit log in the admin: read-only, filtered, searched, exported as JSON lines."""

import json
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import AsyncClient, Client
from django.utils import timezone

from agents_app.core.audit import audit_record
from agents_app.models import AuditEvent
from tests.support.runs import make_run

CHANGELIST = "/admin/agents_app/auditevent/"
EXPORT = CHANGELIST + "export/"


@pytest.fixture
def events(owner, superuser):
    run = make_run(owner)
    return [
        audit_record(action="task.submit", interface="api", actor=owner, run=run),
        audit_record(
            action="tool.call",
            interface="worker",
            run=run,
            target="files.read_file",
            details={"outcome": "failed", "error_code": "TOOL_FAILED"},
        ),
        audit_record(action="run.cancel", interface="web", actor=owner, run=run),
        audit_record(
            action="mcp_server.disable", interface="admin", actor=superuser, target="github"
        ),
    ]


def lines_of(response) -> list[dict]:
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert response["Content-Disposition"].startswith('attachment; filename="audit-')
    body = b"".join(response.streaming_content).decode()
    assert body == "" or body.endswith("\n")
    return [json.loads(line) for line in body.splitlines()]


def test_staff_see_the_log_with_its_filters_and_the_export_button(superuser_admin, events):
    response = superuser_admin.get(CHANGELIST)

    html = response.content.decode()
    assert response.status_code == 200
    assert "files.read_file" in html and "github" in html
    assert 'id="audit-export"' in html and f'href="{EXPORT}?"' in html
    filters = response.context["cl"].filter_specs
    assert [spec.title for spec in filters] == ["interface", "action", "actor"]
    assert response.context["cl"].date_hierarchy == "created_at"


def test_the_admin_offers_no_way_to_add_change_or_delete(superuser_admin, events):
    staff_client = superuser_admin
    event = events[0]

    listing = staff_client.get(CHANGELIST).content.decode()
    page = staff_client.get(f"{CHANGELIST}{event.pk}/change/")

    assert f"{CHANGELIST}add/" not in listing
    assert "delete_selected" not in listing
    assert page.status_code == 200
    html = page.content.decode()
    assert 'name="_save"' not in html and "deletelink" not in html
    assert staff_client.get(f"{CHANGELIST}add/").status_code == 403
    assert staff_client.get(f"{CHANGELIST}{event.pk}/delete/").status_code == 403
    assert staff_client.post(f"{CHANGELIST}{event.pk}/delete/", {"post": "yes"}).status_code == 403
    posted = staff_client.post(f"{CHANGELIST}{event.pk}/change/", {"action": "forged"})
    assert posted.status_code == 403
    assert AuditEvent.objects.count() == len(events)


def test_an_event_of_a_deleted_run_still_shows_with_the_run_number(superuser_admin, events):
    from agents_app.models import Run

    Run.objects.filter(pk=events[0].run_id).delete()

    listing = superuser_admin.get(CHANGELIST)
    page = superuser_admin.get(f"{CHANGELIST}{events[0].pk}/change/")

    assert listing.status_code == page.status_code == 200
    assert [e.run_id for e in listing.context["cl"].result_list][-1] == events[0].run_id
    assert AuditEvent.objects.count() == len(events)


@pytest.mark.dialect
def test_the_changelist_filters_and_searches_by_run_id(superuser_admin, events):
    run_id = events[0].run_id

    by_interface = superuser_admin.get(CHANGELIST, {"interface__exact": "web"})
    by_run = superuser_admin.get(CHANGELIST, {"q": str(run_id)})
    by_target = superuser_admin.get(CHANGELIST, {"q": "github"})

    assert [e.action for e in by_interface.context["cl"].result_list] == ["run.cancel"]
    assert {e.pk for e in by_run.context["cl"].result_list} == {e.pk for e in events[:3]}
    assert [e.action for e in by_target.context["cl"].result_list] == ["mcp_server.disable"]


def test_the_export_button_streams_every_row_matching_the_current_filters(superuser_admin, events):
    response = superuser_admin.get(EXPORT, {"interface__exact": "worker", "q": "read_file"})

    [line] = lines_of(response)
    tool_call = events[1]
    assert line == {
        "id": tool_call.pk,
        "created_at": tool_call.created_at.isoformat(),
        "actor_id": None,
        "actor": "worker",
        "interface": "worker",
        "action": "tool.call",
        "run_id": tool_call.run_id,
        "target": "files.read_file",
        "details": {"outcome": "failed", "error_code": "TOOL_FAILED"},
    }


@pytest.mark.dialect
def test_the_export_without_filters_has_every_row_oldest_first(superuser_admin, events):
    lines = lines_of(superuser_admin.get(EXPORT))

    assert [line["id"] for line in lines] == [e.pk for e in events]


@pytest.mark.dialect
def test_the_export_follows_the_date_hierarchy(superuser_admin, events):
    staff_client = superuser_admin
    tomorrow = timezone.now() + timedelta(days=1)
    params = {
        "created_at__year": tomorrow.year,
        "created_at__month": tomorrow.month,
        "created_at__day": tomorrow.day,
    }

    assert lines_of(staff_client.get(EXPORT, params)) == []


def test_the_export_action_streams_the_ticked_rows(superuser_admin, events):
    ticked = [events[0].pk, events[3].pk]

    response = superuser_admin.post(
        CHANGELIST, {"action": "export_selected", "_selected_action": ticked}
    )

    assert [line["id"] for line in lines_of(response)] == ticked


def test_an_export_with_a_bad_filter_goes_back_to_the_list(superuser_admin, events):
    response = superuser_admin.get(EXPORT, {"no_such_field": "1"})

    assert response.status_code == 302
    assert response["Location"] == f"{CHANGELIST}?e=1"


@pytest.mark.django_db(transaction=True)
def test_the_export_streams_from_an_async_iterator_under_asgi(superuser, events):
    client = AsyncClient()
    client.force_login(superuser)

    async def export() -> tuple[bool, bytes]:
        response = await client.get(EXPORT)
        assert response.status_code == 200
        return response.is_async, b"".join([part async for part in response.streaming_content])

    from asgiref.sync import async_to_sync

    is_async, body = async_to_sync(export)()

    assert is_async
    assert [json.loads(line)["id"] for line in body.splitlines()] == [e.pk for e in events]


@pytest.mark.dialect
def test_the_export_is_read_in_pages_of_rows(superuser_admin, events, monkeypatch):
    staff_client = superuser_admin
    monkeypatch.setattr("agents_app.core.audit.EXPORT_BATCH", 3)

    assert [line["id"] for line in lines_of(staff_client.get(EXPORT))] == [e.pk for e in events]


@pytest.mark.parametrize("path", [CHANGELIST, EXPORT])
def test_a_non_staff_user_is_sent_to_the_admin_login(owner, path):
    client = Client()
    client.force_login(owner)

    response = client.get(path)

    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def test_staff_without_the_view_permission_cannot_see_or_export_it(db, events):
    clerk = get_user_model().objects.create_user("clerk", is_staff=True)
    clerk.user_permissions.add(Permission.objects.get(codename="view_run"))
    client = Client()
    client.force_login(clerk)

    assert client.get(CHANGELIST).status_code == 403
    assert client.get(EXPORT).status_code == 403


def test_staff_with_only_the_view_permission_can_read_and_export(db, events):
    auditor = get_user_model().objects.create_user("auditor", is_staff=True)
    auditor.user_permissions.add(Permission.objects.get(codename="view_auditevent"))
    client = Client()
    client.force_login(auditor)

    assert client.get(CHANGELIST).status_code == 200
    assert len(lines_of(client.get(EXPORT))) == len(events)
