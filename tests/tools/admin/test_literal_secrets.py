"""The literal-secret check looks at values as well as names: a secret written into a server's
configuration is refused wherever it hides (a URL's userinfo or query, an option's value, a
connection URL, a random-looking string), with the way to write it as a ${VAR} instead."""

import pytest
from django.core.exceptions import ValidationError

from tools_app.mcp.config import MCPConfigError, export_mcp_config, import_mcp_config
from tools_app.models import MCPServer, Transport

# Looks generated (mixed case and digits, no words): what an API key looks like.
RANDOM = "q7Vx2LmR9tKp4WzN8bYc3HdF"


def refused(server: MCPServer) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as caught:
        server.full_clean()
    return caught.value.message_dict


def stdio(**fields) -> MCPServer:
    return MCPServer(name="local", transport=Transport.STDIO, command="npx", **fields)


def http(url="https://mcp.example.com/mcp", **fields) -> MCPServer:
    return MCPServer(name="remote", transport=Transport.STREAMABLE_HTTP, url=url, **fields)


@pytest.mark.parametrize(
    "env",
    [
        {"DB_PASS": "hunter2"},
        {"GH_PAT": "abc"},
        {"SENTRY_DSN": "https://abc@o1.ingest.sentry.io/1"},
        {"DATABASE_URL": "postgres://app:hunter2@db.internal:5432/app"},
        {"REDIS_URL": "redis://:hunter2@cache:6379/0"},
        {"UPSTREAM": "https://user:hunter2@api.example.com/v1"},
        {"UPSTREAM": "https://api.example.com/v1?token=abc"},
        {"CONFIG_BLOB": RANDOM},
        {"NOTES": f"use {RANDOM} for the staging account"},
        {"OPENAI": "sk-proj-abcdefghijklmnopqrstuvwxyz"},
    ],
)
def test_a_literal_secret_in_env_is_refused_by_its_name_or_its_value(db, env):
    assert "env" in refused(stdio(env=env))


@pytest.mark.parametrize(
    "url",
    [
        "https://user:hunter2@mcp.example.com/mcp",
        "https://mcp.example.com/mcp?token=abc",
        "https://mcp.example.com/mcp?api_key=abc",
        "https://mcp.example.com/mcp?access_token=abc",
        "https://mcp.example.com/mcp?v=2&key=abc",
        "https://mcp.example.com/mcp?client_secret=abc",
        f"https://mcp.example.com/s/{RANDOM}/mcp",
    ],
)
def test_a_literal_secret_in_the_url_is_refused(db, url):
    [message] = refused(http(url))["url"]
    assert "${" in message  # says how to write it instead


@pytest.mark.parametrize(
    "headers", [{"X-Custom": RANDOM}, {"X-Upstream": "https://u:hunter2@api.example.com/"}]
)
def test_a_literal_secret_in_a_header_is_refused_whatever_its_name(db, headers):
    assert "headers" in refused(http(headers=headers))


@pytest.mark.parametrize(
    "args",
    [
        ["-y", "server", "--api-key", "abc"],
        ["-y", "server", "--api-key=abc"],
        ["--token", "abc"],
        ["--github-token", "abc"],
        ["--client-secret", "abc"],
        ["--db-password", "abc"],
        ["--apiKey", "abc"],
        ["server", "postgres://app:hunter2@db/app"],
        ["--url=https://api.example.com/?access_token=abc"],
        ["server", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"],
    ],
)
def test_a_literal_secret_in_args_is_refused(db, args):
    [message] = refused(stdio(args=args))["args"]
    assert "${" in message


@pytest.mark.parametrize(
    "args",
    [
        ["--api-key", "${API_KEY}"],
        ["--token=${UPSTREAM}"],
        ["-y", "server-github", "${GITHUB_TOKEN}"],
        ["--db", "postgres://app:${DB_PASSWORD}@db/app"],
    ],
)
def test_a_reference_to_a_secret_in_args_is_refused_for_env_since_args_show_in_ps(db, args):
    [message] = refused(stdio(args=args))["args"]
    assert "command line" in message and "put it in env instead" in message


@pytest.mark.parametrize(
    "fields",
    [
        {"args": ["--org=${GH_ORG_NAME}", "--token-file", "${TOKEN_FILE}", "--verbose"]},
        {"args": ["--token-file", "/run/secrets/token", "--no-auth", "stdio"]},
        {"args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/data-2026"]},
        {"env": {"DATABASE_URL": "postgres://app:${DB_PASSWORD}@db/app"}},
        {"env": {"UPSTREAM": "https://${API_USER}:${API_PASS}@api.example.com/?token=${T}"}},
        {"env": {"PATH": "/usr/local/bin:/usr/bin", "APP_SETTING": "MY_APPLICATION_SETTING_1"}},
        {"env": {"RUN_ID": "123e4567-e89b-12d3-a456-426614174000", "LOG_LEVEL": "debug"}},
    ],
)
def test_references_and_ordinary_values_are_accepted(db, fields):
    stdio(**fields).full_clean()


def test_a_url_with_references_for_its_secrets_is_accepted(db):
    http("https://${MCP_USER}:${MCP_PASS}@mcp.example.com/mcp?token=${MCP_TOKEN}").full_clean()


@pytest.mark.dialect
def test_an_import_refuses_literal_secrets_in_values_and_so_never_exports_them(db):
    config = {
        "mcpServers": {
            "db": {
                "command": "npx",
                "args": ["server-postgres", "--api-key", "abc"],
                "env": {"DATABASE_URL": "postgres://app:hunter2@db/app"},
            },
            "remote": {"url": "https://mcp.example.com/mcp?token=abc"},
        }
    }

    with pytest.raises(MCPConfigError) as caught:
        import_mcp_config(config)

    paths = sorted(error.split(":")[0] for error in caught.value.errors)
    assert paths == [
        "mcpServers.db.args",
        "mcpServers.db.env.DATABASE_URL",
        "mcpServers.remote.url",
    ]
    assert "hunter2" not in str(export_mcp_config(MCPServer.objects.all()))
