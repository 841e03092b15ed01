"""Every tool the agents can use, builtin or (later) from MCP servers, behind one interface."""

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.inputs import json_problem, storable, storable_text
from agents_app.core.secrecy import redact, redact_all


class ApprovalLevel:
    AUTO = "auto"
    MODERATE = "moderate"
    MANUAL = "manual"


class SideEffects:
    """What a call can touch; the approval work classifies risk from this."""

    READ_ONLY = "read_only"
    WORKSPACE_WRITE = "workspace_write"
    EXTERNAL = "external"
    CODE_EXECUTION = "code_execution"


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]
    capabilities: frozenset[str]
    domain: str
    approval_level: str = ApprovalLevel.AUTO
    side_effects: str = SideEffects.READ_ONLY
    timeout: float = 30.0
    source: str = "builtin"
    # It waits for something outside the run (a sleep, an event): never offered to a micro
    # agent, which could not come back from it. Staff may set it on any tool (Tool.waits).
    waits: bool = False
    # Its call is answered by a child run the worker starts (the micro agent tool), not by
    # `run`: the step parks at it and goes on with the child's result (engine AwaitChild).
    child_run: bool = False
    # It runs what it is given in the sandbox (tools_app/sandbox.py), confined to the run's
    # workspace: its own approval level decides, which staff may lower below code execution's.
    sandboxed: bool = False
    # An MCP tool's pin (tools_app.mcp.pins): the version this spec describes; blank: builtin.
    pinned_sha256: str = ""
    # An MCP tool read-only by its pinned annotations (readOnlyHint) or by staff's word, not by
    # a guess from its name: only such a tool is no sink for untrusted text (issue 35).
    read_only_pinned: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "capabilities": sorted(self.capabilities),
            "domain": self.domain,
            "schema": self.input_schema,
            "approval_level": self.approval_level,
            "side_effects": self.side_effects,
            "timeout": self.timeout,
            "source": self.source,
        }


@dataclass(frozen=True)
class ToolContext:
    """What a call may use: the run's own workspace, how long it has, and (from the engine)
    whether the run was asked to stop meanwhile: a long call checks it now and then."""

    run_id: int
    workspace: Path
    timeout: float
    cancelled: Callable[[], bool] | None = None


@dataclass
class ToolResult:
    ok: bool
    content: Any = None
    error: str = ""
    # Set by finish_task: the agent declares the task done with this answer.
    finish: bool = False
    details: dict[str, Any] = field(default_factory=dict)


class Tool(ABC):
    """Base class: subclasses set `spec` and implement `run`. Raise ToolError for failures."""

    spec: ToolSpec

    @abstractmethod
    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Do the call; the arguments were validated against `spec.input_schema`."""


class ToolError(Exception):
    """A tool failed in a way the model should hear about (refused path, HTTP error...)."""


# Validators by the identity of the schema they check (held with it, so the id stays its own):
# a tool's spec is checked at every call, and building its validator costs more than using it.
_validators: dict[int, tuple[dict[str, Any], Any]] = {}
VALIDATORS_KEPT = 1024


def _validator(schema: dict[str, Any]) -> Any:
    kept = _validators.get(id(schema))
    if kept is None or kept[0] is not schema:
        if len(_validators) >= VALIDATORS_KEPT:
            _validators.clear()  # schemas of specs since replaced (an MCP server's tools)
        kept = _validators[id(schema)] = (schema, jsonschema.Draft202012Validator(schema))
    return kept[1]


def check_storable(tool: str, arguments: Any) -> None:
    """Raise DomainError(INVALID_ARGUMENTS) when a key or string of `arguments` is not text a
    file name, a database or a person's page can hold: a lone surrogate (JSON's "\\udcff",
    not valid UTF-8) or NUL. Checked before the schema, whose messages would quote it."""
    found = json_problem(arguments)
    if found is None:
        return
    path, problem = found
    where = f"'{storable_text(path)}'" if path else "the arguments object"
    raise DomainError(
        ErrorCode.INVALID_ARGUMENTS,
        f"Invalid arguments for tool '{tool}': {where} {problem}",
        {"tool": tool, "errors": [{"path": storable_text(path), "message": problem}]},
    )


def check_arguments(tool: str, schema: dict[str, Any], arguments: Any) -> None:
    """Raise DomainError(INVALID_ARGUMENTS), naming up to ten problems, unless `arguments`
    fits `schema` (a tool's input schema)."""
    errors = sorted(_validator(schema).iter_errors(arguments), key=lambda e: list(e.path))
    if errors:
        raise DomainError(
            ErrorCode.INVALID_ARGUMENTS,
            f"Invalid arguments for tool '{tool}': {errors[0].message}",
            {
                "tool": tool,
                "errors": [
                    {"path": "/".join(str(p) for p in e.path), "message": e.message}
                    for e in errors[:10]
                ],
            },
        )


# A value that merely contains a description this long is copied text, not a coincidence.
COPIED_DESCRIPTION_CHARS = 20


def _normalised(text: str) -> str:
    """Case, runs of whitespace and the punctuation around it do not make text new."""
    return " ".join(text.lower().split()).strip(" .,:;!?'\"`")


def _copied_description(value: str, descriptions: list[str]) -> str | None:
    """The description `value` repeats (equal to it, or containing a long one), if any."""
    said = _normalised(value)
    for description in descriptions:
        wanted = _normalised(description)
        if wanted and (
            said == wanted or (len(wanted) >= COPIED_DESCRIPTION_CHARS and wanted in said)
        ):
            return description
    return None


def check_not_copied(spec: ToolSpec, arguments: Any) -> None:
    """Raise DomainError(INVALID_ARGUMENTS) when a string argument repeats its property's
    description or the tool's: small models copy schema text instead of giving a value."""

    def walk(schema: Any, value: Any, path: list[str]) -> None:
        if not isinstance(schema, dict):
            return
        if isinstance(value, str):
            own = schema.get("description")
            copied = _copied_description(
                value, [d for d in (own, spec.description) if isinstance(d, str)]
            )
            if copied is not None:
                where = "/".join(path) or "the arguments"
                raise DomainError(
                    ErrorCode.INVALID_ARGUMENTS,
                    f"Invalid arguments for tool '{spec.name}': {where} repeats the description "
                    "instead of giving a real value",
                    {"tool": spec.name, "errors": [{"path": where, "message": "copied text"}]},
                )
        elif isinstance(value, dict):
            properties = schema.get("properties") or {}
            for key, item in value.items():
                walk(properties.get(key), item, [*path, str(key)])
        elif isinstance(value, list):
            for position, item in enumerate(value):
                walk(schema.get("items"), item, [*path, str(position)])

    walk(spec.input_schema, arguments, [])


class ToolRegistry:
    """Tools by name, discoverable by capability and by domain (seed 000). Thread-safe."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}
        self._lock = threading.Lock()

    def register(self, tool: Tool) -> None:
        with self._lock:
            self._tools[tool.spec.name] = tool

    def unregister(self, name: str) -> None:
        with self._lock:
            self._tools.pop(name, None)

    def get(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            raise DomainError(
                ErrorCode.TOOL_NOT_FOUND,
                f"Tool '{name}' not available",
                {"requested_tool": name, "available_tools": self.names()},
            ) from None

    def names(self) -> list[str]:
        return sorted(self._tools)

    def all(self) -> list[Tool]:
        return [self._tools[name] for name in self.names()]

    def for_capabilities(self, capabilities: Iterable[str]) -> list[Tool]:
        wanted = {c.upper() for c in capabilities}
        return [t for t in self.all() if t.spec.capabilities & wanted]

    def for_domain(self, domain: str) -> list[Tool]:
        return [t for t in self.all() if t.spec.domain == domain]

    def validate_arguments(self, name: str, arguments: Any) -> None:
        """Raise DomainError(INVALID_ARGUMENTS) unless `arguments` fits the tool's schema and
        gives real values, not the schema's own descriptions, in text that can be stored."""
        spec = self.get(name).spec
        check_storable(name, arguments)
        check_arguments(name, spec.input_schema, arguments)
        check_not_copied(spec, arguments)

    def call(self, name: str, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Validate and run one call. Tool failures come back as ToolResult(ok=False), never raise;
        an unknown tool or invalid arguments raise DomainError. The result's content and error
        are storable (`core.inputs.storable`): an MCP server's NUL or lone surrogate is U+FFFD;
        and redacted (`core.secrecy`): what the model, the rows and the pages see of a tool
        holds no secret of AgentDesk's."""
        tool = self.get(name)
        self.validate_arguments(name, arguments)
        try:
            result = tool.run(arguments, context)
        except ToolError as exc:
            result = ToolResult(ok=False, error=str(exc))
        except Exception as exc:  # a tool bug must fail the call, not the worker
            result = ToolResult(ok=False, error=f"{type(exc).__name__}: {exc}")
        result.content = redact_all(storable(result.content))
        result.error = redact(storable_text(result.error))
        return result
