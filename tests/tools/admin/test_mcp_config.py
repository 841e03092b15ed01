"""mcp_config.json: parsing with clear paths, all-or-nothing upserts, export and round trip."""

import pytest

from tools_app.mcp.config import (
    MCPConfigError,
    export_mcp_config,
    import_mcp_config,
    load_mcp_config,
    parse_mcp_config,
)
from tools_app.models import NOT_CHECKED_SINCE_ENABLED, MCPServer, ServerStatus, Transport

CONFIG = {
    "mcpServers": {
        "filesystem": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/data"],
        },
        "github": {
            "command": "docker",
            "args": ["run", "-i", "--rm", "ghcr.io/github/github-mcp-server"],
            "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"},
            "cwd": "/srv",
            "disabled": True,
        },
        "remote": {
            "type": "http",
            "url": "https://mcp.example.com/mcp",
            "headers": {"Authorization": "Bearer ${REMOTE_TOKEN}"},
            "timeout": 60,
            "approvalLevel": "manual",
        },
        "legacy": {"type": "sse", "url": "http://127.0.0.1:9000/sse"},
    }
}


def problems(data) -> list[str]:
    with pytest.raises(MCPConfigError) as caught:
        parse_mcp_config(data)
    return caught.value.errors


def test_each_entry_shape_maps_to_its_transport():
    servers = {s["name"]: s for s in parse_mcp_config(CONFIG)}

    assert servers["filesystem"]["transport"] == Transport.STDIO
    assert servers["github"]["enabled"] is False
    assert servers["github"]["cwd"] == "/srv"
    assert servers["remote"]["transport"] == Transport.STREAMABLE_HTTP
    assert servers["remote"]["call_timeout"] == 60.0
    assert servers["remote"]["default_approval_level"] == "manual"
    assert servers["legacy"]["transport"] == Transport.SSE


def test_a_url_without_a_type_is_streamable_http_and_transport_is_accepted_too():
    servers = parse_mcp_config(
        {
            "mcpServers": {
                "a": {"url": "https://a.example/mcp"},
                "b": {"transport": "sse", "url": "https://b.example/sse"},
            }
        }
    )

    assert [s["transport"] for s in servers] == [Transport.STREAMABLE_HTTP, Transport.SSE]


def test_a_literal_secret_is_refused_with_the_path_of_the_field():
    [error] = problems(
        {"mcpServers": {"github": {"command": "npx", "env": {"GITHUB_TOKEN": "ghp_1"}}}}
    )

    assert error.startswith("mcpServers.github.env.GITHUB_TOKEN: looks like a secret")
    assert "${GITHUB_TOKEN}" in error


def test_every_problem_is_reported_with_its_path():
    errors = problems(
        {
            "mcpServers": {
                "Bad Name": {"command": "npx"},
                "nothing": {},
                "both": {"command": "npx", "url": "https://x.example"},
                "args": {"command": "npx", "args": "-y pkg"},
                "web": {"type": "http", "url": "ftp://x", "headers": {"X-Token": "abc"}},
                "kind": {"type": "websocket", "url": "https://x.example"},
                "slow": {"command": "npx", "timeout": -1, "approvalLevel": "never"},
            }
        }
    )

    assert errors == [
        'mcpServers["Bad Name"]: bad server name. Use 1 to 50 lower-case letters, digits, '
        "'-' and '_', starting with a letter or digit (its tools are named '<server>.<tool>').",
        "mcpServers.nothing: needs a command (a local process) or a url (a remote server)",
        "mcpServers.both: has both command and url; give one (or a type)",
        "mcpServers.args.args: must be a list of strings",
        "mcpServers.web.url: needs an http:// or https:// URL",
        errors[5],
        "mcpServers.kind.type: unknown transport 'websocket'; use stdio, http (Streamable HTTP) "
        "or sse",
        "mcpServers.slow.timeout: must be a number of seconds above 0",
        "mcpServers.slow.approvalLevel: must be one of auto, moderate, manual",
    ]
    assert errors[5].startswith("mcpServers.web.headers.X-Token: looks like a secret")


@pytest.mark.parametrize("data", [[], {"servers": {}}, {"mcpServers": []}])
def test_the_wrong_top_level_shape_says_what_is_expected(data):
    assert problems(data) == ['expected an object {"mcpServers": {"<name>": {...}}}']


def test_malformed_json_says_where():
    with pytest.raises(MCPConfigError) as caught:
        load_mcp_config('{"mcpServers": {,}}', source="conf.json")

    assert caught.value.errors == [
        "conf.json: not valid JSON: line 1 column 17: Expecting property name enclosed in double quotes"
    ]


@pytest.mark.dialect
def test_import_creates_then_updates_by_name(db):
    first = import_mcp_config(CONFIG)
    assert set(first.created) == {"filesystem", "github", "remote", "legacy"}
    assert MCPServer.objects.get(name="github").status == ServerStatus.DISABLED

    changed = {"mcpServers": {**CONFIG["mcpServers"], "github": {"command": "uvx", "args": ["gh"]}}}
    second = import_mcp_config(changed)

    assert (second.created, second.updated) == ((), ("github",))
    assert set(second.unchanged) == {"filesystem", "remote", "legacy"}
    github = MCPServer.objects.get(name="github")
    assert (github.command, github.args, github.env, github.cwd) == ("uvx", ["gh"], {}, "")
    assert (github.enabled, github.status, github.last_error) == (
        True,
        ServerStatus.UNCHECKED,
        NOT_CHECKED_SINCE_ENABLED,
    )
    assert MCPServer.objects.count() == 4
    assert "created 0, updated 1 (github), unchanged 3" in second.summary()


@pytest.mark.dialect
def test_an_import_with_one_bad_server_writes_nothing(db):
    import_mcp_config({"mcpServers": {"filesystem": {"command": "npx"}}})
    bad = {
        "mcpServers": {
            "filesystem": {"command": "uvx"},
            "newcomer": {"command": "npx"},
            "broken": {"url": "not a url"},
        }
    }

    with pytest.raises(MCPConfigError) as caught:
        import_mcp_config(bad)

    assert caught.value.errors == ["mcpServers.broken.url: needs an http:// or https:// URL"]
    assert list(MCPServer.objects.values_list("name", "command")) == [("filesystem", "npx")]


def test_keys_other_clients_use_are_ignored_with_a_warning(db):
    result = import_mcp_config(
        {
            "globalShortcut": "Ctrl+Space",
            "mcpServers": {"files": {"command": "npx", "autoApprove": ["read_file"]}},
        }
    )

    assert result.created == ("files",)
    assert result.warnings == (
        "globalShortcut: not used by AgentDesk; ignored",
        "mcpServers.files.autoApprove: not used by AgentDesk; ignored",
    )


def test_export_writes_the_widely_used_shape_with_references_kept(db):
    import_mcp_config(CONFIG)

    exported = export_mcp_config(MCPServer.objects.all())

    assert exported == {
        "mcpServers": {
            "filesystem": CONFIG["mcpServers"]["filesystem"],
            "github": CONFIG["mcpServers"]["github"],
            "legacy": CONFIG["mcpServers"]["legacy"],
            "remote": CONFIG["mcpServers"]["remote"],
        }
    }


def test_importing_an_export_gives_the_same_servers_and_the_same_file(db):
    import_mcp_config(CONFIG)
    exported = export_mcp_config(MCPServer.objects.all())
    fields = ["name", "transport", "command", "args", "cwd", "env", "url", "headers", "enabled"]
    before = list(MCPServer.objects.values(*fields, "call_timeout", "default_approval_level"))
    MCPServer.objects.all().delete()

    result = import_mcp_config(exported)

    assert len(result.created) == 4
    after = list(MCPServer.objects.values(*fields, "call_timeout", "default_approval_level"))
    assert after == before
    assert export_mcp_config(MCPServer.objects.all()) == exported
