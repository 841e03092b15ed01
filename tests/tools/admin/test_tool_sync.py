"""sync_server_tools and sync_builtin_tools keep Tool rows in step without losing staff edits."""

from dataclasses import dataclass, field

import pytest
from mcp.types import Tool as MCPTool
from mcp.types import ToolAnnotations

from agents_app.core.errors import DomainError, ErrorCode
from tools_app.builtin import register_builtin_tools
from tools_app.mcp.discovery import sync_builtin_tools, sync_server_tools
from tools_app.mcp.pins import tool_pin_approve
from tools_app.models import CapabilityOrigin, ServerStatus, Tool, ToolSource
from tools_app.registry import ApprovalLevel, ToolRegistry

pytestmark = pytest.mark.dialect

READ = {
    "name": "read_file",
    "description": "Read a file.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}
WRITE = {"name": "write_file", "description": "Write a file.", "input_schema": {"type": "object"}}


def test_discovered_tools_get_namespaced_rows_with_inferred_capabilities(make_server):
    server = make_server("files")

    tools = sync_server_tools(server, [READ, WRITE])

    assert [t.name for t in tools] == ["files.read_file", "files.write_file"]
    read = tools[0]
    assert (read.source, read.server, read.remote_name) == (ToolSource.MCP, server, "read_file")
    assert read.capabilities == ["FILE_READ", "READ"]
    assert read.domain == "file_operations"
    assert read.capabilities_inferred
    assert read.effective_approval_level == ApprovalLevel.MODERATE
    server.refresh_from_db()
    assert server.tool_count == 2


def test_a_changed_description_waits_for_review_and_its_approval_keeps_staff_edits(make_server):
    server = make_server("files")
    sync_server_tools(server, [READ])
    Tool.objects.filter(name="files.read_file").update(
        capabilities=["SECRET_STUFF"],
        domain="secrets",
        capabilities_origin=CapabilityOrigin.STAFF,
        enabled=False,
        approval_level=ApprovalLevel.MANUAL,
    )

    sync_server_tools(
        server, [{**READ, "description": "Read a text file.", "input_schema": {"type": "object"}}]
    )

    row = Tool.objects.get(name="files.read_file")
    assert (row.description, row.pending_description) == ("Read a file.", "Read a text file.")
    assert row.needs_review  # issue 35: a tool is the version approved, until staff review
    row = tool_pin_approve(
        tool_id=row.pk, expected_sha256=row.pending_sha256, actor=None, interface="admin"
    )
    assert row.description == "Read a text file."
    assert row.input_schema == {"type": "object"}
    assert (row.capabilities, row.domain) == (["SECRET_STUFF"], "secrets")
    assert (row.enabled, row.approval_level) == (False, ApprovalLevel.MANUAL)


def test_inferred_capabilities_follow_a_changed_description_once_staff_approve_it(make_server):
    server = make_server("misc")
    sync_server_tools(server, [{"name": "frob", "description": "Does things."}])

    sync_server_tools(server, [{"name": "frob", "description": "Fetch a URL."}])

    row = Tool.objects.get(name="misc.frob")
    assert row.capabilities == ["GENERAL"]  # nothing is derived from an unreviewed version
    tool_pin_approve(
        tool_id=row.pk, expected_sha256=row.pending_sha256, actor=None, interface="admin"
    )
    assert Tool.objects.get(name="misc.frob").capabilities == ["WEB_FETCH"]


def test_tools_the_server_no_longer_offers_are_removed(make_server):
    server = make_server("files")
    sync_server_tools(server, [READ, WRITE])

    tools = sync_server_tools(server, [READ])

    assert [t.name for t in tools] == ["files.read_file"]
    assert not Tool.objects.filter(name="files.write_file").exists()
    server.refresh_from_db()
    assert server.tool_count == 1


def test_sdk_tool_objects_dataclasses_and_declared_capabilities_are_understood(make_server):
    @dataclass(frozen=True)
    class Discovered:
        name: str
        description: str
        input_schema: dict
        annotations: dict = field(default_factory=dict)

    server = make_server("mixed")
    sdk_tool = MCPTool(
        name="launch",
        input_schema={"type": "object"},
        annotations=ToolAnnotations(read_only_hint=True),
        _meta={"agentdesk/capabilities": ["rocketry"], "agentdesk/domain": "Space"},
    )

    sync_server_tools(server, [sdk_tool, Discovered("echo", "Echo it back.", {"type": "object"})])

    launch = Tool.objects.get(name="mixed.launch")
    assert (launch.capabilities, launch.domain) == (["ROCKETRY"], "space")
    assert launch.capabilities_origin == CapabilityOrigin.DECLARED
    assert launch.side_effects == "read_only"
    assert Tool.objects.get(name="mixed.echo").capabilities == ["ECHO"]


def test_a_tool_without_a_usable_name_is_skipped(make_server):
    server = make_server("odd")

    tools = sync_server_tools(server, [{"description": "nameless"}, {"name": "x" * 200}, READ])

    assert [t.name for t in tools] == ["odd.read_file"]


def test_a_broken_server_keeps_its_tools_until_it_lists_them_again(make_server):
    server = make_server("files")
    sync_server_tools(server, [READ])

    server.mark(ServerStatus.BROKEN, error="connection refused")

    assert Tool.objects.filter(server=server).count() == 1


def registry_with_builtins() -> ToolRegistry:
    registry = ToolRegistry()
    register_builtin_tools(
        registry, file_max_bytes=10, http_max_bytes=10, http_timeout=1, http_allow_private=False
    )
    return registry


def test_builtin_tools_get_rows_staff_can_override(db):
    rows = sync_builtin_tools(registry_with_builtins())

    assert {r.name for r in rows} == {
        "finish_task",
        "git",
        "git_commit",
        "http_get",
        "list_files",
        "read_file",
        "run_command",
        "run_python",
        "start_micro_agent",
        "write_file",
    }
    read = Tool.objects.get(name="read_file")
    assert (read.source, read.server) == (ToolSource.BUILTIN, None)
    assert (read.capabilities, read.domain) == (["FILE_READ"], "file_operations")
    assert read.effective_approval_level == ApprovalLevel.AUTO

    read.approval_level = ApprovalLevel.MANUAL
    read.save()
    sync_builtin_tools(registry_with_builtins())
    assert Tool.objects.get(name="read_file").effective_approval_level == ApprovalLevel.MANUAL


def test_builtin_rows_of_tools_no_longer_registered_are_removed(db):
    sync_builtin_tools(registry_with_builtins())
    smaller = registry_with_builtins()
    smaller.unregister("http_get")

    sync_builtin_tools(smaller)

    assert not Tool.objects.filter(name="http_get").exists()


def test_a_row_becomes_the_registry_spec_with_staff_edits_applied(make_server):
    server = make_server("files", call_timeout=12.5)
    [row] = sync_server_tools(server, [READ])
    row.approval_level = ApprovalLevel.AUTO

    spec = row.tool_spec()

    assert (spec.name, spec.source, spec.timeout) == ("files.read_file", "mcp", 12.5)
    assert spec.capabilities == frozenset({"READ", "FILE_READ"})
    assert spec.approval_level == ApprovalLevel.AUTO


def test_approving_a_version_other_than_the_one_pending_is_a_conflict(make_server):
    server = make_server("files")
    sync_server_tools(server, [READ])
    sync_server_tools(server, [{**READ, "description": "Read a text file."}])
    row = Tool.objects.get(name="files.read_file")

    with pytest.raises(DomainError) as refused:
        tool_pin_approve(tool_id=row.pk, expected_sha256="0" * 64, actor=None, interface="admin")

    assert refused.value.code == ErrorCode.CONFLICT
    assert Tool.objects.get(name="files.read_file").description == "Read a file."


def test_a_builtin_tool_has_no_pin_to_approve(db):
    row = Tool.objects.create(name="a_builtin_of_this_test", source=ToolSource.BUILTIN)

    with pytest.raises(DomainError) as refused:
        tool_pin_approve(tool_id=row.pk, expected_sha256="", actor=None, interface="admin")

    assert refused.value.code == ErrorCode.NOT_FOUND
