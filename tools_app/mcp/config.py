"""mcp_config.json in and out: the {"mcpServers": {name: {...}}} file of Claude Desktop, Cursor
and Claude Code.

An entry is {command, args?, env?, cwd?} (stdio) or {url, headers?, type?} (HTTP: "type": "sse"
is SSE, anything else Streamable HTTP); "type"/"transport": "stdio" | "http" | "sse" |
"streamable_http" may say it outright. "disabled": true, as Claude Desktop and Cursor write it,
imports a disabled server. AgentDesk's own keys are "timeout" (seconds per call) and
"approvalLevel" (auto | moderate | manual); both are written only when not the default.
Keys other clients add (autoApprove, description...) are ignored with a warning.
Secrets stay `${NAME}` references both ways; a literal secret is refused.
"""

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from tools_app.models import (
    DEFAULT_CALL_TIMEOUT,
    SERVER_NAME_MESSAGE,
    SERVER_NAME_PATTERN,
    ApprovalChoices,
    MCPServer,
    Transport,
    args_problem,
    is_http_url,
    mapping_problems,
    url_problem,
)

DEFAULT_APPROVAL_LEVEL = MCPServer._meta.get_field("default_approval_level").default
TRANSPORT_NAMES = {
    "stdio": Transport.STDIO,
    "sse": Transport.SSE,
    "http": Transport.STREAMABLE_HTTP,
    "streamable_http": Transport.STREAMABLE_HTTP,
    "streamable-http": Transport.STREAMABLE_HTTP,
    "streamableHttp": Transport.STREAMABLE_HTTP,
}
EXPORTED_TYPE = {Transport.STREAMABLE_HTTP: "http", Transport.SSE: "sse"}
STDIO_KEYS = frozenset({"command", "args", "env", "cwd"})
HTTP_KEYS = frozenset({"url", "headers"})
COMMON_KEYS = frozenset({"type", "transport", "disabled", "timeout", "approvalLevel"})
# Where a model field lives in an entry, for error paths.
FIELD_KEYS = {
    "transport": "type",
    "enabled": "disabled",
    "call_timeout": "timeout",
    "default_approval_level": "approvalLevel",
}
CONFIG_FIELDS = (
    "transport",
    "command",
    "args",
    "cwd",
    "env",
    "url",
    "headers",
    "enabled",
    "call_timeout",
    "default_approval_level",
)


class MCPConfigError(ValueError):
    """The configuration cannot be imported; `errors` has one message per problem, each starting
    with the path of the bad field (mcpServers.github.env.GITHUB_TOKEN)."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("\n".join(errors))
        self.errors = errors


@dataclass(frozen=True)
class ImportResult:
    created: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def summary(self) -> str:
        parts = []
        for label, names in (
            ("created", self.created),
            ("updated", self.updated),
            ("unchanged", self.unchanged),
        ):
            parts.append(f"{label} {len(names)}" + (f" ({', '.join(names)})" if names else ""))
        return ", ".join(parts)


def _path(*segments: str) -> str:
    path = ""
    for segment in segments:
        if re.fullmatch(r"[A-Za-z0-9_-]+", segment):
            path += f".{segment}" if path else segment
        else:
            path += f"[{json.dumps(segment)}]"
    return path


def load_mcp_config(text: str | bytes, *, source: str = "mcp_config.json") -> Any:
    """The JSON in `text`; MCPConfigError says where it is malformed."""
    try:
        return json.loads(text)
    except UnicodeDecodeError:
        raise MCPConfigError([f"{source}: not UTF-8 text"]) from None
    except json.JSONDecodeError as exc:
        raise MCPConfigError(
            [f"{source}: not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}"]
        ) from None


def _entry(name: str, entry: Any, errors: list[str], warnings: list[str]) -> dict[str, Any]:
    def error(key: str, message: str, *more: str) -> None:
        errors.append(f"{_path('mcpServers', name, key, *more)}: {message}")

    if not re.match(SERVER_NAME_PATTERN, name):
        errors.append(f"{_path('mcpServers', name)}: bad server name. {SERVER_NAME_MESSAGE}")
    if not isinstance(entry, dict):
        errors.append(f"{_path('mcpServers', name)}: must be an object")
        return {}
    for key in sorted(set(entry) - STDIO_KEYS - HTTP_KEYS - COMMON_KEYS):
        warnings.append(f"{_path('mcpServers', name, key)}: not used by AgentDesk; ignored")

    declared = [entry[k] for k in ("type", "transport") if k in entry]
    transport = None
    for value in declared:
        if value not in TRANSPORT_NAMES:
            error("type", f"unknown transport {value!r}; use stdio, http (Streamable HTTP) or sse")
    if declared and all(v in TRANSPORT_NAMES for v in declared):
        kinds = {TRANSPORT_NAMES[v] for v in declared}
        if len(kinds) > 1:
            error("type", "'type' and 'transport' disagree")
        transport = kinds.pop()
    elif not declared:
        if "command" in entry and "url" in entry:
            errors.append(
                f"{_path('mcpServers', name)}: has both command and url; give one (or a type)"
            )
        elif "command" in entry:
            transport = Transport.STDIO
        elif "url" in entry:
            transport = Transport.STREAMABLE_HTTP
        else:
            errors.append(
                f"{_path('mcpServers', name)}: needs a command (a local process) or a url "
                "(a remote server)"
            )

    result: dict[str, Any] = {
        "name": name,
        "transport": transport,
        "command": "",
        "args": [],
        "cwd": "",
        "env": {},
        "url": "",
        "headers": {},
    }
    if transport == Transport.STDIO:
        command = entry.get("command")
        if not isinstance(command, str) or not command.strip():
            error("command", "a stdio server needs a command, e.g. npx or uvx")
        result["command"] = command if isinstance(command, str) else ""
        result["args"] = entry.get("args", [])
        if problem := args_problem(result["args"]):
            error("args", problem)
        result["cwd"] = entry.get("cwd", "")
        if not isinstance(result["cwd"], str):
            error("cwd", "must be a string")
        result["env"] = entry.get("env", {})
        for key, problem in mapping_problems(result["env"], kind="env"):
            error("env", problem, *([key] if key else []))
        for key in sorted(HTTP_KEYS & set(entry)):
            warnings.append(f"{_path('mcpServers', name, key)}: a stdio server has no {key}")
    elif transport in (Transport.STREAMABLE_HTTP, Transport.SSE):
        result["url"] = entry.get("url", "")
        if not isinstance(result["url"], str) or not is_http_url(result["url"]):
            error("url", "needs an http:// or https:// URL")
        elif problem := url_problem(result["url"]):
            error("url", problem)
        result["headers"] = entry.get("headers", {})
        for key, problem in mapping_problems(result["headers"], kind="headers"):
            error("headers", problem, *([key] if key else []))
        for key in sorted(STDIO_KEYS & set(entry)):
            warnings.append(f"{_path('mcpServers', name, key)}: an HTTP server has no {key}")

    disabled = entry.get("disabled", False)
    if not isinstance(disabled, bool):
        error("disabled", "must be true or false")
    result["enabled"] = not disabled
    timeout = entry.get("timeout", DEFAULT_CALL_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        error("timeout", "must be a number of seconds above 0")
    result["call_timeout"] = float(timeout) if isinstance(timeout, int | float) else timeout
    approval = entry.get("approvalLevel", DEFAULT_APPROVAL_LEVEL)
    if approval not in ApprovalChoices.values:
        error("approvalLevel", f"must be one of {', '.join(ApprovalChoices.values)}")
    result["default_approval_level"] = approval
    return result


def _parse(data: Any) -> tuple[list[dict[str, Any]], list[str]]:
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers"), dict):
        raise MCPConfigError(['expected an object {"mcpServers": {"<name>": {...}}}'])
    errors: list[str] = []
    warnings = [f"{key}: not used by AgentDesk; ignored" for key in data if key != "mcpServers"]
    servers = [_entry(name, entry, errors, warnings) for name, entry in data["mcpServers"].items()]
    if errors:
        raise MCPConfigError(errors)
    return servers, warnings


def parse_mcp_config(data: Any) -> list[dict[str, Any]]:
    """The servers of a loaded mcp_config.json as MCPServer field values (name, transport,
    command, args, cwd, env, url, headers, enabled, call_timeout, default_approval_level).
    Raises MCPConfigError listing every problem with its path."""
    return _parse(data)[0]


def import_mcp_config(data: Any) -> ImportResult:
    """Create or update (by name) every server of a loaded mcp_config.json, all or nothing.
    Every field the file format covers is set from the entry, defaults for what it leaves out;
    servers not in the file are left alone. Raises MCPConfigError (nothing written)."""
    servers, warnings = _parse(data)
    created, updated, unchanged, errors = [], [], [], []
    with transaction.atomic():
        names = [entry["name"] for entry in servers]
        existing = {s.name: s for s in MCPServer.objects.select_for_update().filter(name__in=names)}
        to_save = []
        for entry in servers:
            server = existing.get(entry["name"]) or MCPServer(name=entry["name"])
            before = {f: getattr(server, f) for f in CONFIG_FIELDS} if server.pk else None
            for field_name in CONFIG_FIELDS:
                setattr(server, field_name, entry[field_name])
            try:
                server.full_clean()
            # _parse refuses first whatever the model's checks would: no test gets here
            # (tests/dialect_guard.py asks every other line of this function).
            except ValidationError as exc:  # pragma: no cover
                for field_name, messages in exc.message_dict.items():
                    key = FIELD_KEYS.get(field_name, field_name)
                    for message in messages:
                        errors.append(f"{_path('mcpServers', server.name, key)}: {message}")
                continue
            if before is None:
                created.append(server.name)
                to_save.append(server)
            elif before != {f: getattr(server, f) for f in CONFIG_FIELDS}:
                updated.append(server.name)
                to_save.append(server)
            else:
                unchanged.append(server.name)
        if errors:  # pragma: no cover (only the model's checks above add errors here)
            raise MCPConfigError(errors)
        for server in to_save:
            server.save()
    return ImportResult(tuple(created), tuple(updated), tuple(unchanged), tuple(warnings))


def export_server(server: MCPServer) -> dict[str, Any]:
    if server.transport == Transport.STDIO:
        entry: dict[str, Any] = {"command": server.command, "args": list(server.args)}
        if server.env:
            entry["env"] = dict(server.env)
        if server.cwd:
            entry["cwd"] = server.cwd
    else:
        entry = {"type": EXPORTED_TYPE[server.transport], "url": server.url}
        if server.headers:
            entry["headers"] = dict(server.headers)
    if not server.enabled:
        entry["disabled"] = True
    if server.call_timeout != DEFAULT_CALL_TIMEOUT:
        timeout = server.call_timeout
        entry["timeout"] = int(timeout) if timeout.is_integer() else timeout
    if server.default_approval_level != DEFAULT_APPROVAL_LEVEL:
        entry["approvalLevel"] = server.default_approval_level
    return entry


def export_mcp_config(servers: Iterable[MCPServer]) -> dict[str, Any]:
    """{"mcpServers": {...}} for `servers`, by name; env and headers keep their references."""
    return {"mcpServers": {s.name: export_server(s) for s in sorted(servers, key=lambda s: s.name)}}


def dump_mcp_config(config: dict[str, Any]) -> str:
    return json.dumps(config, indent=2, ensure_ascii=False) + "\n"
