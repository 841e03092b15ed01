"""Staff enabling, disabling, checking and importing MCP servers in the admin, in the log."""

import io
import json
import sys

import pytest

from agents_app.models import AuditEvent
from tools_app.models import MCPServer, ServerStatus

CHANGELIST = "/admin/tools_app/mcpserver/"
IMPORT = CHANGELIST + "import/"


def make_server(name: str, **fields) -> MCPServer:
    fields.setdefault("command", sys.executable)
    server = MCPServer(name=name, transport="stdio", **fields)
    server.full_clean()
    server.save()
    return server


def audited(action: str) -> list[tuple[str, str, str, dict]]:
    events = AuditEvent.objects.filter(action=action).order_by("target")
    return [(e.target, e.interface, e.actor_label, e.details) for e in events]


def test_enabling_servers_records_one_event_per_selected_server(db, superuser_admin):
    off = make_server("files", enabled=False)
    on = make_server("time")

    superuser_admin.post(CHANGELIST, {"action": "enable", "_selected_action": [off.pk, on.pk]})

    assert audited("mcp_server.enable") == [
        ("files", "admin", "staff", {"changed": True}),
        ("time", "admin", "staff", {"changed": False}),
    ]
    assert AuditEvent.objects.get(target="files").run_id is None


def test_disabling_servers_records_one_event_per_selected_server(db, superuser_admin, superuser):
    staff = superuser
    on = make_server("files")

    superuser_admin.post(CHANGELIST, {"action": "disable", "_selected_action": [on.pk]})

    on.refresh_from_db()
    assert not on.enabled
    assert audited("mcp_server.disable") == [("files", "admin", "staff", {"changed": True})]
    assert AuditEvent.objects.get().actor == staff


def test_importing_a_file_records_what_became_of_each_server_in_it(db, superuser_admin):
    make_server("time", command="uvx", args=["mcp-server-time"])
    make_server("files", command="npx")
    config = {
        "mcpServers": {
            "files": {"command": "npx", "args": ["-y", "server-filesystem"]},
            "time": {"command": "uvx", "args": ["mcp-server-time"]},
            "remote": {"url": "https://mcp.example.com/mcp"},
        }
    }
    upload = io.BytesIO(json.dumps(config).encode())
    upload.name = "team.json"

    response = superuser_admin.post(IMPORT, {"file": upload})

    assert response.status_code == 302
    assert audited("mcp_server.import") == [
        ("files", "admin", "staff", {"file": "team.json", "change": "updated"}),
        ("remote", "admin", "staff", {"file": "team.json", "change": "created"}),
        ("time", "admin", "staff", {"file": "team.json", "change": "unchanged"}),
    ]


def test_a_refused_import_records_nothing(db, superuser_admin):
    upload = io.BytesIO(b'{"mcpServers": {"bad name!": {"command": "npx"}}}')
    upload.name = "bad.json"

    response = superuser_admin.post(IMPORT, {"file": upload})

    assert response.status_code == 200
    assert not MCPServer.objects.exists()
    assert not AuditEvent.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_check_now_records_each_server_with_the_outcome(superuser_admin):
    failing = make_server(
        "failing", args=["-c", "import sys; sys.stderr.write('no config\\n'); sys.exit(3)"]
    )
    off = make_server("off", enabled=False)

    superuser_admin.post(
        CHANGELIST, {"action": "check_now", "_selected_action": [failing.pk, off.pk]}
    )

    failing.refresh_from_db()
    [(target, interface, actor, details), disabled] = audited("mcp_server.check")
    assert (target, interface, actor) == ("failing", "admin", "staff")
    assert details == {"status": ServerStatus.BROKEN, "error": failing.last_error}
    assert disabled == ("off", "admin", "staff", {"status": "disabled", "error": ""})
