"""MCPServer: what a configuration may hold, how secrets are referenced, and its status."""

import pytest
from django.core.exceptions import ValidationError

from tools_app.models import (
    NOT_CHECKED,
    NOT_CHECKED_SINCE_ENABLED,
    MCPServer,
    ServerConfig,
    ServerConfigError,
    ServerStatus,
    Transport,
)


def errors_of(server: MCPServer) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as caught:
        server.full_clean()
    return caught.value.message_dict


@pytest.mark.parametrize("name", ["Files", "my server", "a.b", "-x", "x" * 51, "", "files\n"])
def test_a_server_name_that_cannot_prefix_tool_names_is_refused(db, name):
    server = MCPServer(name=name, command="npx")

    assert "name" in errors_of(server)


@pytest.mark.parametrize("name", ["files", "github-2", "my_tools", "0", "x" * 50])
def test_a_lower_case_short_name_is_accepted(db, name):
    MCPServer(name=name, command="npx").full_clean()


def test_a_literal_secret_in_env_is_refused_with_a_reference_to_use_instead(db):
    server = MCPServer(name="github", command="npx", env={"GITHUB_TOKEN": "ghp_abc123"})

    [message] = errors_of(server)["env"]
    assert message.startswith("GITHUB_TOKEN: looks like a secret")
    assert '"${GITHUB_TOKEN}"' in message


@pytest.mark.parametrize(
    "key", ["API_KEY", "x-api-key", "Authorization", "DB_PASSWORD", "client_secret", "Cookie"]
)
def test_every_secret_looking_key_refuses_a_literal(db, key):
    server = MCPServer(name="web", transport=Transport.SSE, url="https://x.example/sse")
    server.headers = {key: "hunter2"}

    assert "headers" in errors_of(server)


def test_a_reference_and_a_bearer_reference_are_accepted_for_secrets(db):
    MCPServer(
        name="web",
        transport=Transport.STREAMABLE_HTTP,
        url="https://x.example/mcp",
        headers={"Authorization": "Bearer ${WEB_TOKEN}", "X-Api-Key": "${WEB_KEY}"},
    ).full_clean()


def test_a_literal_beside_a_reference_is_still_refused_for_a_secret(db):
    server = MCPServer(name="web", command="npx", env={"API_KEY": "sk-${SUFFIX}"})

    assert "env" in errors_of(server)


def test_plain_values_for_ordinary_keys_are_kept_as_text(db):
    MCPServer(
        name="files", command="npx", env={"LOG_LEVEL": "debug", "HOME_DIR": "/tmp"}
    ).full_clean()


def test_a_malformed_reference_is_refused(db):
    server = MCPServer(name="files", command="npx", env={"LOG_LEVEL": "${not closed"})

    assert "malformed reference" in errors_of(server)["env"][0]


def test_stdio_needs_a_command_and_http_needs_an_http_url(db):
    assert "command" in errors_of(MCPServer(name="a", transport=Transport.STDIO))
    assert "url" in errors_of(
        MCPServer(name="b", transport=Transport.STREAMABLE_HTTP, url="ftp://x")
    )


def test_args_must_be_a_list_of_strings(db):
    assert "args" in errors_of(MCPServer(name="a", command="npx", args=["-y", 3]))


def test_the_call_timeout_must_be_positive(db):
    assert "call_timeout" in errors_of(MCPServer(name="a", command="npx", call_timeout=0))


def test_spec_substitutes_references_from_the_environment(db, monkeypatch):
    monkeypatch.setenv("GH_TOKEN", "ghp_real")
    server = MCPServer(
        name="github",
        command="npx",
        args=["-y", "server-github", "--org=${GH_ORG_NAME}"],
        env={"GITHUB_TOKEN": "${GH_TOKEN}", "LOG": "info"},
    )
    monkeypatch.setenv("GH_ORG_NAME", "acme")

    spec = server.spec()

    assert spec == ServerConfig(
        name="github",
        transport="stdio",
        command="npx",
        args=("-y", "server-github", "--org=acme"),
        env=(("GITHUB_TOKEN", "ghp_real"), ("LOG", "info")),
        call_timeout=30.0,
    )
    assert "ghp_real" not in repr(spec)
    assert hash(spec) == hash(server.spec())


def test_a_stored_server_passing_a_secret_in_its_args_is_not_started_with_it(db, monkeypatch):
    monkeypatch.setenv("SERVER_API_KEY", "q7Vx2LmR9tKp4WzN8bYc3HdF")
    # Saved before such args were refused (save() does not validate).
    server = MCPServer.objects.create(
        name="old", command="server", args=["--api-key", "${SERVER_API_KEY}"]
    )

    with pytest.raises(ServerConfigError) as raised:
        server.spec()

    assert "SERVER_API_KEY" in str(raised.value) and "env" in str(raised.value)
    assert "q7Vx2LmR9tKp4WzN8bYc3HdF" not in str(raised.value)


def test_a_missing_variable_is_named_in_the_error(db, monkeypatch):
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    server = MCPServer(
        name="web",
        transport=Transport.SSE,
        url="https://x.example/sse",
        headers={"Authorization": "Bearer ${NOT_SET_ANYWHERE}"},
    )

    with pytest.raises(ServerConfigError) as caught:
        server.resolved_headers()

    assert caught.value.variable == "NOT_SET_ANYWHERE"
    assert "MCP server 'web'" in str(caught.value)
    assert "environment variable NOT_SET_ANYWHERE is not set" in str(caught.value)


def test_a_new_server_is_not_checked_yet_rather_than_broken(make_server):
    server = make_server()

    assert server.status == ServerStatus.UNCHECKED
    assert server.last_error == NOT_CHECKED
    assert server.last_checked_at is None


def test_mark_records_a_check(make_server):
    server = make_server()

    assert server.mark(
        ServerStatus.ACTIVE, stderr_tail=[f"line {i}" for i in range(80)], tool_count=3
    )

    server.refresh_from_db()
    assert server.status == ServerStatus.ACTIVE
    assert server.last_error == ""
    assert server.tool_count == 3
    assert server.last_checked_at is not None
    assert server.stderr_tail.splitlines()[0] == "line 30"  # only the last 50 lines


def test_a_late_check_does_not_revive_a_disabled_server(make_server):
    server = make_server()
    MCPServer.objects.filter(pk=server.pk).disable()

    assert server.mark(ServerStatus.ACTIVE, tool_count=3) is False

    server.refresh_from_db()
    assert server.status == ServerStatus.DISABLED


def test_disabling_and_enabling_keep_the_status_in_step(make_server):
    server = make_server()
    server.mark(ServerStatus.ACTIVE)

    server.enabled = False
    server.save(update_fields=["enabled"])
    server.refresh_from_db()
    assert server.status == ServerStatus.DISABLED

    assert MCPServer.objects.filter(pk=server.pk).enable() == 1
    server.refresh_from_db()
    assert (server.status, server.last_error) == (
        ServerStatus.UNCHECKED,
        NOT_CHECKED_SINCE_ENABLED,
    )


def test_a_check_does_not_touch_updated_at(make_server):
    server = make_server()
    before = server.updated_at

    server.mark(ServerStatus.BROKEN, error="boom")

    server.refresh_from_db()
    assert server.updated_at == before
