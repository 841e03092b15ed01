"""The admin: server list with health, import/export of mcp_config.json, actions, tools."""

import io
import json
import sys

import pytest
from django.test import Client

from tests.support.mcp_servers import ECHO_SERVER
from tools_app.mcp.discovery import sync_server_tools
from tools_app.models import CapabilityOrigin, MCPServer, ServerStatus, Tool

CHANGELIST = "/admin/tools_app/mcpserver/"
IMPORT = "/admin/tools_app/mcpserver/import/"
EXPORT = "/admin/tools_app/mcpserver/export/"


def upload(content: str, name: str = "mcp_config.json") -> io.BytesIO:
    file = io.BytesIO(content.encode())
    file.name = name
    return file


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def test_the_changelist_shows_each_server_with_its_status_and_the_file_buttons(
    superuser_admin, make_server
):
    make_server("files")
    broken = make_server("remote", transport="sse")
    broken.mark(ServerStatus.BROKEN, error="connection refused")

    html = superuser_admin.get(CHANGELIST).content.decode()

    assert "mcp-status-broken" in html
    assert 'title="connection refused"' in html
    assert f'href="{IMPORT}"' in html and f'href="{EXPORT}"' in html


def test_the_change_form_renders_both_transport_sections(superuser_admin, make_server):
    server = make_server("files", env={"API_KEY": "${FILES_KEY}"})

    html = superuser_admin.get(f"{CHANGELIST}{server.pk}/change/").content.decode()

    assert "transport-stdio" in html and "transport-http" in html
    assert "${FILES_KEY}" in html


def test_saving_a_literal_secret_in_the_form_is_refused(superuser_admin):
    response = superuser_admin.post(
        f"{CHANGELIST}add/",
        {
            "name": "github",
            "transport": "stdio",
            "enabled": "on",
            "call_timeout": "30",
            "default_approval_level": "moderate",
            "command": "npx",
            "args": "[]",
            "cwd": "",
            "env": '{"GITHUB_TOKEN": "ghp_secret"}',
            "url": "",
            "headers": "{}",
            "tools-TOTAL_FORMS": "0",
            "tools-INITIAL_FORMS": "0",
        },
    )

    assert response.status_code == 200
    assert "looks like a secret" in response.content.decode()
    assert not MCPServer.objects.exists()


def test_importing_an_uploaded_file_creates_servers_and_says_so(superuser_admin):
    config = {"mcpServers": {"files": {"command": "npx"}, "remote": {"url": "https://x.example"}}}

    response = superuser_admin.post(IMPORT, {"file": upload(json.dumps(config))}, follow=True)

    assert response.redirect_chain[-1][0] == CHANGELIST
    assert "Imported mcp_config.json: created 2 (files, remote), updated 0, unchanged 0." in (
        messages_of(response)
    )
    assert MCPServer.objects.count() == 2


def test_a_bad_upload_shows_every_error_and_imports_nothing(superuser_admin):
    config = {
        "mcpServers": {
            "files": {"command": "npx"},
            "github": {"command": "npx", "env": {"GITHUB_TOKEN": "ghp_secret"}},
        }
    }

    response = superuser_admin.post(IMPORT, {"file": upload(json.dumps(config))})

    html = response.content.decode()
    assert response.status_code == 200
    assert "Nothing was imported" in html
    assert "mcpServers.github.env.GITHUB_TOKEN: looks like a secret" in html
    assert not MCPServer.objects.exists()


def test_an_upload_that_is_not_json_says_where_it_breaks(superuser_admin):
    response = superuser_admin.post(IMPORT, {"file": upload("{oops", name="mine.json")})

    assert "mine.json: not valid JSON: line 1 column 2" in response.content.decode()


def test_export_all_downloads_the_json_file(superuser_admin, make_server):
    make_server("files", args=["-y", "pkg"])

    response = superuser_admin.get(EXPORT)

    assert response["Content-Type"] == "application/json"
    assert response["Content-Disposition"] == 'attachment; filename="mcp_config.json"'
    assert json.loads(response.content) == {
        "mcpServers": {"files": {"command": "npx", "args": ["-y", "pkg"]}}
    }


def test_the_export_action_downloads_only_the_selected_servers(superuser_admin, make_server):
    files = make_server("files")
    make_server("other")

    response = superuser_admin.post(
        CHANGELIST, {"action": "export_selected", "_selected_action": [files.pk]}
    )

    assert list(json.loads(response.content)["mcpServers"]) == ["files"]


@pytest.mark.dialect
def test_disable_and_enable_actions_change_status(superuser_admin, make_server):
    server = make_server("files")
    server.mark(ServerStatus.ACTIVE)

    superuser_admin.post(CHANGELIST, {"action": "disable", "_selected_action": [server.pk]})
    server.refresh_from_db()
    assert (server.enabled, server.status) == (False, ServerStatus.DISABLED)

    superuser_admin.post(CHANGELIST, {"action": "enable", "_selected_action": [server.pk]})
    server.refresh_from_db()
    assert (server.enabled, server.status) == (True, ServerStatus.UNCHECKED)


def test_check_now_reports_a_real_server_active_and_a_failing_one_broken(
    transactional_db, superuser_admin, make_server
):
    # transactional_db: the check writes from threads of its own, with their own connections.
    good = make_server("echo", command=sys.executable, args=[str(ECHO_SERVER)])
    bad = make_server(
        "failing",
        command=sys.executable,
        args=["-c", "import sys; sys.stderr.write('cannot start: no config\\n'); sys.exit(3)"],
    )

    response = superuser_admin.post(
        CHANGELIST, {"action": "check_now", "_selected_action": [good.pk, bad.pk]}, follow=True
    )

    good.refresh_from_db()
    bad.refresh_from_db()
    assert (good.status, good.tool_count) == (ServerStatus.ACTIVE, 2)
    assert set(good.tools.values_list("name", flat=True)) == {"echo.echo", "echo.get_current_time"}
    assert bad.status == ServerStatus.BROKEN
    assert "cannot start: no config" in bad.stderr_tail
    shown = messages_of(response)
    assert "echo: Connected: 2 tools" in shown
    assert any(m.startswith("failing: Broken: ") for m in shown)


@pytest.mark.parametrize("path", [CHANGELIST, IMPORT, EXPORT, "/admin/tools_app/tool/"])
def test_a_non_staff_user_is_sent_to_the_admin_login(owner, path):
    client = Client()
    client.force_login(owner)

    response = client.get(path)

    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def test_staff_edits_of_capabilities_are_kept_by_the_next_discovery(superuser_admin, make_server):
    server = make_server("files")
    [tool] = sync_server_tools(server, [{"name": "read_file", "description": "Read a file."}])

    response = superuser_admin.post(
        f"/admin/tools_app/tool/{tool.pk}/change/",
        {
            "enabled": "on",
            "approval_level": "manual",
            "capabilities": "file_read, audit",
            "domain": "compliance",
            "side_effects": "read_only",
        },
    )
    assert response.status_code == 302
    sync_server_tools(server, [{"name": "read_file", "description": "Read any file."}])

    tool.refresh_from_db()
    assert tool.capabilities == ["AUDIT", "FILE_READ"]
    assert tool.domain == "compliance"
    assert tool.capabilities_origin == CapabilityOrigin.STAFF
    assert tool.effective_approval_level == "manual"
    # The new description waits for staff's review (issue 35: pinned tools).
    assert (tool.description, tool.pending_description) == ("Read a file.", "Read any file.")


def test_the_tool_list_and_page_render_with_the_schema(superuser_admin, make_server):
    server = make_server("files")
    sync_server_tools(
        server,
        [{"name": "read_file", "input_schema": {"type": "object", "required": ["path"]}}],
    )
    tool = Tool.objects.get(server=server)

    listing = superuser_admin.get("/admin/tools_app/tool/").content.decode()
    page = superuser_admin.get(f"/admin/tools_app/tool/{tool.pk}/change/").content.decode()

    assert "files.read_file" in listing and "moderate (inherited)" in listing
    assert "&quot;required&quot;: [" in page
