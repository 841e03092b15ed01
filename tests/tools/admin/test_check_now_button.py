"""The "Check now" button on an MCP server's admin page, and how an unchecked server looks there.

The check runs in the process that serves the page (here the test process, which has no MCP
pool), against real stdio servers, and writes from threads of its own: transactional_db."""

import re
import sys

import pytest
from django.test import Client

from agents_app.models import AuditEvent
from tests.support.mcp_servers import ECHO_SERVER
from tools_app.models import MCPServer, ServerStatus

CHANGELIST = "/admin/tools_app/mcpserver/"
MISSING_COMMAND = "/nonexistent/agentdesk-no-such-mcp-server"


def change_page(server: MCPServer) -> str:
    return f"{CHANGELIST}{server.pk}/change/"


def check_url(server: MCPServer) -> str:
    return f"{CHANGELIST}{server.pk}/check/"


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


@pytest.fixture
def echo_server(make_server) -> MCPServer:
    return make_server("echo", command=sys.executable, args=[str(ECHO_SERVER)])


def test_check_now_on_a_real_server_records_its_tools_and_says_so(
    transactional_db, superuser_admin, echo_server
):
    response = superuser_admin.post(check_url(echo_server), follow=True)

    assert response.redirect_chain == [(change_page(echo_server), 302)]
    assert messages_of(response) == ["Connected: 2 tools"]
    echo_server.refresh_from_db()
    assert (echo_server.status, echo_server.tool_count) == (ServerStatus.ACTIVE, 2)
    assert set(echo_server.tools.values_list("name", flat=True)) == {
        "echo.echo",
        "echo.get_current_time",
    }
    assert "mcp-status-active" in response.content.decode()
    event = AuditEvent.objects.get(action="mcp_server.check")
    assert (event.target, event.interface, event.details) == (
        "echo",
        "admin",
        {"status": "active", "error": ""},
    )


def test_check_now_on_a_server_whose_command_does_not_exist_shows_it_broken_with_the_reason(
    transactional_db, superuser_admin, make_server
):
    server = make_server("ghost", command=MISSING_COMMAND)

    response = superuser_admin.post(check_url(server), follow=True)

    server.refresh_from_db()
    assert server.status == ServerStatus.BROKEN
    assert MISSING_COMMAND in server.last_error
    [message] = messages_of(response)
    assert message == f"Broken: {server.last_error}"
    html = response.content.decode()
    assert "mcp-status-broken" in html and MISSING_COMMAND in html


def test_the_button_posts_with_the_pages_csrf_token(transactional_db, superuser, echo_server):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(superuser)
    html = browser.get(change_page(echo_server)).content.decode()
    form = re.search(
        r'<form method="post" action="([^"]+)" class="mcp-check-now">(.*?)</form>', html, re.S
    )
    assert form, "the change page has the Check now form"
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.group(2)).group(1)

    assert browser.post(form.group(1)).status_code == 403  # no token: refused
    # Nothing was checked. (Asked of the audit log, which only a check writes: the server's
    # status could also be set by a worker process's pool connecting to it.)
    assert not AuditEvent.objects.filter(action="mcp_server.check").exists()

    response = browser.post(form.group(1), {"csrfmiddlewaretoken": token})

    assert response.status_code == 302 and response["Location"] == change_page(echo_server)
    [check] = AuditEvent.objects.filter(action="mcp_server.check")
    assert (check.target, check.details["status"]) == ("echo", "active")
    echo_server.refresh_from_db()
    assert echo_server.status == ServerStatus.ACTIVE


def test_a_non_staff_user_is_sent_to_the_admin_login_and_nothing_is_checked(owner, make_server):
    server = make_server("ghost", command=MISSING_COMMAND)
    client = Client()
    client.force_login(owner)

    response = client.post(check_url(server))

    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")
    server.refresh_from_db()
    assert server.status == ServerStatus.UNCHECKED
    assert not AuditEvent.objects.filter(action="mcp_server.check").exists()


def test_staff_without_the_change_permission_is_refused(staff, make_server):
    server = make_server("ghost", command=MISSING_COMMAND)
    client = Client()
    client.force_login(staff)

    assert client.post(check_url(server)).status_code == 403
    server.refresh_from_db()
    assert server.status == ServerStatus.UNCHECKED


def test_checking_is_a_post_only(superuser_admin, make_server):
    server = make_server("ghost", command=MISSING_COMMAND)

    assert superuser_admin.get(check_url(server)).status_code == 405
    server.refresh_from_db()
    assert server.status == ServerStatus.UNCHECKED


def test_a_never_checked_server_is_shown_not_checked_yet_and_never_broken(
    superuser_admin, make_server
):
    server = make_server("files")

    change = superuser_admin.get(change_page(server)).content.decode()
    listing = superuser_admin.get(CHANGELIST).content.decode()

    for html in (change, listing):
        badge = re.search(r'<span class="mcp-status mcp-status-(\w+)"[^>]*>([^<]*)</span>', html)
        assert badge.groups() == ("unchecked", "Not checked yet")
        assert "mcp-status-broken" not in html
    assert 'id="mcp-check-now"' in change


def test_a_server_being_added_shows_no_status_badge(superuser_admin):
    html = superuser_admin.get(f"{CHANGELIST}add/").content.decode()

    assert "mcp-status" not in html
    assert "Broken" not in html and "Not checked yet" not in html
    assert 'id="mcp-check-now"' not in html
