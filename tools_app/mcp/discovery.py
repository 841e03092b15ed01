"""Discovery: inferring a tool's capabilities and domain, and keeping Tool rows in step with
what the code and the MCP servers offer, without overwriting what staff edited."""

import dataclasses
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from tools_app.mcp.pins import pin_new, pin_observe
from tools_app.models import (
    CAPABILITY_NAME,
    TOOL_NAME_MAX,
    CapabilityOrigin,
    MCPServer,
    Tool,
    ToolSource,
)
from tools_app.registry import SideEffects, ToolRegistry

logger = logging.getLogger(__name__)


# --- Capability inference ---------------------------------------------------------------
# Deterministic: the words of the tool's own name (snake, kebab and camel case split) pick
# capabilities from this table; only when none match, the first sentence of the description
# is read the same way. Nothing matches: GENERAL. A path-like name or schema property adds the
# FILE_ variants. Staff edit the result in the admin; an edit is never overwritten.
CAPABILITY_RULES: tuple[tuple[frozenset[str], frozenset[str]], ...] = tuple(
    (frozenset(words.split()), frozenset(caps.split()))
    for words, caps in (
        ("read get show view cat head tail stat info describe inspect status diff log", "READ"),
        ("list ls tree glob", "READ LIST"),
        ("search find grep query lookup", "READ SEARCH"),
        (
            "write create edit update modify set put patch append insert add save upload move "
            "rename copy mkdir commit push merge checkout reset",
            "WRITE",
        ),
        ("delete remove rm drop destroy unlink", "WRITE DELETE"),
        ("run exec execute shell bash command eval script terminal", "EXECUTE"),
        ("http https fetch url uri web download browse scrape crawl", "WEB_FETCH"),
        ("browser navigate click screenshot playwright puppeteer", "BROWSER"),
        ("git commit branch checkout merge rebase", "GIT"),
        ("time timezone date clock now datetime", "TIME"),
        ("echo ping", "ECHO"),
        ("sql database db table", "DATABASE"),
        ("memory remember recall entity entities observation observations", "MEMORY"),
        ("think thinking thought thoughts sequentialthinking", "REASONING"),
    )
)
PATH_WORDS = frozenset(
    ["file", "files", "directory", "directories", "dir", "folder", "path", "paths"]
)
PATH_PROPERTIES = frozenset(
    [
        "path",
        "paths",
        "file",
        "files",
        "filename",
        "file_path",
        "filepath",
        "directory",
        "dir",
        "folder",
    ]
)
FILE_VARIANTS = {"READ": "FILE_READ", "LIST": "FILE_LIST", "WRITE": "FILE_WRITE"}
# First match wins; otherwise the server's name, or "general" for a bare name.
DOMAIN_RULES: tuple[tuple[str, str], ...] = (
    ("GIT", "version_control"),
    ("FILE_READ", "file_operations"),
    ("FILE_WRITE", "file_operations"),
    ("BROWSER", "browser"),
    ("WEB_FETCH", "web"),
    ("DATABASE", "data"),
    ("EXECUTE", "code_execution"),
    ("TIME", "time"),
    ("MEMORY", "memory"),
    ("REASONING", "reasoning"),
    ("ECHO", "testing"),
)
READ_ONLY_CAPABILITIES = frozenset(
    ["READ", "LIST", "SEARCH", "FILE_READ", "FILE_LIST", "GIT", "TIME", "ECHO", "REASONING"]
)


def _words(text: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    spaced = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", spaced)
    return [w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w]


def _capabilities_of(words: set[str]) -> set[str]:
    found: set[str] = set()
    for keywords, caps in CAPABILITY_RULES:
        if words & keywords:
            found |= caps
    return found


def infer_capabilities(
    name: str, description: str = "", input_schema: Mapping[str, Any] | None = None
) -> tuple[set[str], str]:
    """(capabilities, domain) guessed from a tool's name, description and input schema.
    `name` may be namespaced (`server.tool`): the server part is only the fallback domain."""
    server, dot, tool_name = name.partition(".")
    if not dot:
        server, tool_name = "", name
    words = set(_words(tool_name))
    capabilities = _capabilities_of(words)
    if not capabilities:
        first_sentence = re.split(r"\.\s|\n", description or "", maxsplit=1)[0]
        capabilities = _capabilities_of(set(_words(first_sentence)))
    properties = (input_schema or {}).get("properties")
    property_names = {p.lower() for p in properties} if isinstance(properties, Mapping) else set()
    if words & PATH_WORDS or property_names & PATH_PROPERTIES:
        capabilities |= {FILE_VARIANTS[c] for c in capabilities if c in FILE_VARIANTS}
    if property_names & {"url", "uri"}:
        capabilities.add("WEB_FETCH")
    if not capabilities:
        capabilities = {"GENERAL"}
    domain = next((d for cap, d in DOMAIN_RULES if cap in capabilities), server or "general")
    return capabilities, domain


def infer_side_effects(capabilities: Iterable[str], annotations: Mapping[str, Any]) -> str:
    """read_only when the server says so (readOnlyHint) or every capability only reads;
    code_execution for EXECUTE; external otherwise (MCP tools act outside the workspace)."""
    caps = set(capabilities)
    if annotations.get("readOnlyHint") is True or annotations.get("read_only_hint") is True:
        return SideEffects.READ_ONLY
    if "EXECUTE" in caps:
        return SideEffects.CODE_EXECUTION
    if caps and caps <= READ_ONLY_CAPABILITIES:
        return SideEffects.READ_ONLY
    return SideEffects.EXTERNAL


# --- Syncing tool rows ---------------------------------------------------------------------
@dataclass(frozen=True)
class OfferedTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any]
    capabilities: frozenset[str]  # declared by the server; empty: infer them
    domain: str


def _as_dict(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if hasattr(value, "model_dump"):  # an mcp.types model
        return value.model_dump(by_alias=True, exclude_none=True)
    return {}


def _offered(tool: Any) -> OfferedTool | None:
    """One tool as a server lists it (dict, dataclass or mcp.types.Tool), or None if unusable.
    Servers may declare capabilities/domain as keys of their own or in `_meta` (plain or
    under the `agentdesk/` prefix)."""
    data = _as_dict(tool)
    name = data.get("name")
    if not isinstance(name, str) or not 0 < len(name) <= TOOL_NAME_MAX or not name.isprintable():
        return None
    schema = data.get("input_schema", data.get("inputSchema"))
    meta = _as_dict(data.get("meta", data.get("_meta")))
    declared = next(
        (
            source[key]
            for source in (data, meta)
            for key in ("capabilities", "agentdesk/capabilities")
            if source.get(key)
        ),
        [],
    )
    domain = next(
        (
            source[key]
            for source in (data, meta)
            for key in ("domain", "agentdesk/domain")
            if isinstance(source.get(key), str)
        ),
        "",
    )
    capabilities = frozenset(
        str(c).upper() for c in declared if CAPABILITY_NAME.match(str(c).upper())
    )
    return OfferedTool(
        name=name,
        description=data.get("description") or "",
        input_schema=schema if isinstance(schema, dict) else {"type": "object"},
        annotations=_as_dict(data.get("annotations")),
        capabilities=capabilities,
        domain=domain.lower() if capabilities else "",
    )


def _derived(
    name: str, offered: OfferedTool | None, description: str, schema: Any, annotations: Any
) -> dict[str, Any]:
    """Capabilities, domain and side effects derived from one version of a tool (declared by
    its server, or inferred from its name, description, schema and annotations)."""
    if offered is not None and offered.capabilities:
        capabilities, domain = set(offered.capabilities), offered.domain
        origin = CapabilityOrigin.DECLARED
        if not domain:
            domain = infer_capabilities(name, description, schema)[1]
    else:
        capabilities, domain = infer_capabilities(name, description, schema)
        origin = CapabilityOrigin.INFERRED
    return {
        "capabilities": sorted(capabilities),
        "domain": domain,
        "side_effects": infer_side_effects(capabilities, annotations or {}),
        "capabilities_origin": origin,
    }


def derived_fields(row: Tool) -> list[str]:
    """Derive capabilities, domain and side effects again from the row's pinned version
    (after staff approved a new one), unless staff set them. Returns the fields changed."""
    if row.capabilities_origin == CapabilityOrigin.STAFF:
        return []
    values = _derived(row.name, None, row.description, row.input_schema, row.annotations)
    if row.capabilities_origin == CapabilityOrigin.DECLARED:
        values.pop("capabilities_origin")  # declared ones stay until the next discovery
        values.pop("capabilities")
    return _apply(row, values)


def _apply(row: Tool, values: dict[str, Any]) -> list[str]:
    changed = [name for name, value in values.items() if getattr(row, name) != value]
    for name in changed:
        setattr(row, name, values[name])
    return changed


def _describe(row: Tool, offered: OfferedTool) -> list[str]:
    """Refresh what the server owns on `row`, through its pin (tools_app.mcp.pins): a new tool
    is pinned as offered; a known one whose version differs from its pin keeps the pin and is
    marked changed, and nothing is derived from the version that waits for review. Returns
    the fields that changed."""
    version = {
        "description": offered.description,
        "input_schema": offered.input_schema,
        "annotations": offered.annotations,
    }
    changed = _apply(row, {"remote_name": offered.name})
    if row.pk is None:
        pin_new(row, **version)
        current = True
    else:
        fields, current = pin_observe(row, **version)
        changed += fields
    if current and row.capabilities_origin != CapabilityOrigin.STAFF:
        changed += _apply(
            row,
            _derived(row.name, offered, row.description, row.input_schema, row.annotations),
        )
    return changed


@transaction.atomic
def sync_server_tools(server: MCPServer, tools: Iterable[Any]) -> list[Tool]:
    """Make the server's Tool rows match the tools it offers now (dicts with name, description,
    input_schema/inputSchema, annotations?, or mcp.types.Tool objects): new ones are created
    with inferred (or declared) capabilities, known ones get the server's description and
    schema (and fresh capabilities unless staff edited them; enabled and approval_level are
    staff's alone), vanished ones are deleted, and tool_count is updated.
    Returns the server's tools by name. Unusable entries (no name, too long) are skipped."""
    locked = MCPServer.objects.select_for_update().get(pk=server.pk)
    existing = {row.remote_name: row for row in locked.tools.select_for_update()}
    offered: dict[str, OfferedTool] = {}
    for tool in tools:
        item = _offered(tool)
        if item is None:
            logger.warning("MCP server %s offered a tool without a usable name: %r", server, tool)
        elif item.name not in offered:
            offered[item.name] = item
    for remote_name, item in offered.items():
        name = f"{locked.name}.{remote_name}"
        row = existing.get(remote_name)
        if row is None:
            row = Tool(server=locked, source=ToolSource.MCP, name=name)
            _describe(row, item)
            row.save()
            continue
        changed = _describe(row, item)
        # The server was renamed: no test renames one and syncs it again
        # (tests/dialect_guard.py asks every other line of this function).
        if row.name != name:  # pragma: no cover
            row.name = name
            changed.append("name")
        if changed:
            row.save(update_fields=[*changed, "updated_at"])
    locked.tools.exclude(remote_name__in=list(offered)).delete()
    MCPServer.objects.filter(pk=server.pk).update(tool_count=len(offered))
    server.tool_count = len(offered)
    return list(locked.tools.select_related("server").order_by("name"))


@transaction.atomic
def sync_builtin_tools(registry: ToolRegistry) -> list[Tool]:
    """Give every builtin tool of `registry` a Tool row (so staff can disable it or override its
    approval level) and delete rows of builtin tools no longer registered. Capabilities, domain
    and side effects follow the code unless staff edited them. Returns the builtin rows."""
    specs = {t.spec.name: t.spec for t in registry.all() if t.spec.source == ToolSource.BUILTIN}
    Tool.objects.bulk_create(
        [Tool(name=name, source=ToolSource.BUILTIN) for name in specs], ignore_conflicts=True
    )
    rows = Tool.objects.select_for_update().filter(source=ToolSource.BUILTIN)
    for row in rows:
        spec = specs.get(row.name)
        if spec is None:
            continue
        values: dict[str, Any] = {
            "description": spec.description,
            "input_schema": spec.input_schema,
            "default_approval_level": spec.approval_level,
        }
        if row.capabilities_origin != CapabilityOrigin.STAFF:
            values |= {
                "capabilities": sorted(spec.capabilities),
                "domain": spec.domain,
                "side_effects": spec.side_effects,
                "capabilities_origin": CapabilityOrigin.DECLARED,
            }
        changed = [name for name, value in values.items() if getattr(row, name) != value]
        if changed:
            for name in changed:
                setattr(row, name, values[name])
            row.save(update_fields=[*changed, "updated_at"])
    Tool.objects.filter(source=ToolSource.BUILTIN).exclude(name__in=list(specs)).delete()
    return list(Tool.objects.filter(source=ToolSource.BUILTIN).order_by("name"))
