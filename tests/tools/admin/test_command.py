"""manage.py mcp_config import / export with real files."""

import json

import pytest
from django.core.management import CommandError, call_command

from tools_app.models import MCPServer

CONFIG = {
    "mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem"]},
        "remote": {"type": "sse", "url": "https://mcp.example.com/sse"},
    }
}


@pytest.fixture
def config_file(tmp_path):
    path = tmp_path / "mcp_config.json"
    path.write_text(json.dumps(CONFIG))
    return path


@pytest.fixture(autouse=True)
def own_var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path / "var"
    settings.VAR_DIR.mkdir()


def test_import_reads_the_file_and_reports_what_it_did(db, config_file, capsys):
    call_command("mcp_config", "import", str(config_file))

    assert set(MCPServer.objects.values_list("name", flat=True)) == {"files", "remote"}
    assert "created 2 (files, remote), updated 0, unchanged 0" in capsys.readouterr().out


def test_import_defaults_to_mcp_config_path(db, config_file, settings):
    settings.MCP_CONFIG_PATH = config_file

    call_command("mcp_config", "import")

    assert MCPServer.objects.count() == 2


def test_a_missing_file_is_an_error_unless_if_exists(db, tmp_path, settings):
    settings.MCP_CONFIG_PATH = tmp_path / "absent.json"

    with pytest.raises(CommandError, match="absent.json does not exist"):
        call_command("mcp_config", "import")
    call_command("mcp_config", "import", "--if-exists")

    assert MCPServer.objects.count() == 0


def test_a_bad_file_imports_nothing_and_lists_the_problems(db, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"mcpServers": {"ok": {"command": "npx"}, "bad": {"env": {}}}}))

    with pytest.raises(CommandError) as caught:
        call_command("mcp_config", "import", str(path))

    assert "was not imported (nothing changed)" in str(caught.value)
    assert "mcpServers.bad: needs a command" in str(caught.value)
    assert MCPServer.objects.count() == 0


def test_if_changed_keeps_admin_edits_until_the_file_changes(db, config_file):
    call_command("mcp_config", "import", str(config_file), "--if-changed")
    MCPServer.objects.filter(name="files").disable()

    call_command("mcp_config", "import", str(config_file), "--if-changed")
    assert MCPServer.objects.get(name="files").enabled is False

    config_file.write_text(json.dumps(CONFIG, indent=2))
    call_command("mcp_config", "import", str(config_file), "--if-changed")
    assert MCPServer.objects.get(name="files").enabled is True


def test_if_changed_still_imports_servers_missing_from_the_database(db, config_file):
    call_command("mcp_config", "import", str(config_file), "--if-changed")
    MCPServer.objects.filter(name="remote").delete()

    call_command("mcp_config", "import", str(config_file), "--if-changed")

    assert MCPServer.objects.filter(name="remote").exists()


def test_export_writes_a_file_that_imports_back(db, config_file, tmp_path, capsys):
    call_command("mcp_config", "import", str(config_file))
    target = tmp_path / "out" / "exported.json"
    target.parent.mkdir()

    call_command("mcp_config", "export", str(target))

    assert json.loads(target.read_text()) == CONFIG
    assert "Exported 2 server(s)" in capsys.readouterr().out


def test_export_to_stdout_by_default(db, config_file, capsys):
    call_command("mcp_config", "import", str(config_file))
    capsys.readouterr()

    call_command("mcp_config", "export")

    assert json.loads(capsys.readouterr().out) == CONFIG
