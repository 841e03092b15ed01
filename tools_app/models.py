"""MCP servers and tools as staff manage them in the admin, and the rules about one row.

Secrets never live in these rows: env and header values (and args and URLs) may hold `${NAME}`
references to AgentDesk's environment variables, substituted only when a connection is made
(`MCPServer.spec()`). Tool rows are written by `discovery.sync_server_tools` and
`discovery.sync_builtin_tools`, which keep what staff edited.
"""

import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone

from agents_app.core.secrecy import secret_register
from tools_app.registry import ApprovalLevel, SideEffects, ToolSpec
from tools_app.secrecy import (
    REFERENCE,
    arg_problems,
    is_reference,
    literal_secret_problem,
    looks_secret,
    redact,
    secret_arg_references,
    secret_args_message,
    secret_variable,
)

logger = logging.getLogger(__name__)

# Tools are named `<server>.<tool>`, so a server name has no dot and stays short.
SERVER_NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,49}\Z"
SERVER_NAME_MESSAGE = (
    "Use 1 to 50 lower-case letters, digits, '-' and '_', starting with a letter or digit "
    "(its tools are named '<server>.<tool>')."
)
validate_server_name = RegexValidator(SERVER_NAME_PATTERN, SERVER_NAME_MESSAGE)

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")

NOT_CHECKED = "Not checked yet."
NOT_CHECKED_SINCE_ENABLED = "Not checked since it was enabled."
STDERR_TAIL_LINES = 50
STDERR_TAIL_CHARS = 8000
DEFAULT_CALL_TIMEOUT = 30.0
TOOL_NAME_MAX = 128  # the MCP spec's recommended limit for a tool's own name


class Transport(models.TextChoices):
    STDIO = "stdio", "stdio (local process)"
    STREAMABLE_HTTP = "streamable_http", "Streamable HTTP"
    SSE = "sse", "SSE (legacy HTTP)"


HTTP_TRANSPORTS = frozenset({Transport.STREAMABLE_HTTP, Transport.SSE})


class ServerStatus(models.TextChoices):
    # Never checked since it was added or enabled: neither up nor down yet, so not "broken".
    UNCHECKED = "unchecked", "Not checked yet"
    ACTIVE = "active"
    BROKEN = "broken"
    DISABLED = "disabled"


class ApprovalChoices(models.TextChoices):
    AUTO = ApprovalLevel.AUTO
    MODERATE = ApprovalLevel.MODERATE
    MANUAL = ApprovalLevel.MANUAL


class SideEffectChoices(models.TextChoices):
    READ_ONLY = SideEffects.READ_ONLY, "read only"
    WORKSPACE_WRITE = SideEffects.WORKSPACE_WRITE, "writes the workspace"
    EXTERNAL = SideEffects.EXTERNAL, "external"
    CODE_EXECUTION = SideEffects.CODE_EXECUTION, "code execution"


class ServerConfigError(Exception):
    """A server's configuration cannot be used as it stands (a referenced variable is unset)."""

    def __init__(self, message: str, *, variable: str = "") -> None:
        super().__init__(message)
        self.variable = variable


@dataclass(frozen=True)
class ServerConfig:
    """What the connection layer needs to reach one server, references already substituted.
    Hashable; compare two with == to see whether a live session still matches. The fields that
    may carry secrets stay out of repr()."""

    name: str
    transport: str  # stdio | streamable_http | sse
    command: str = ""
    args: tuple[str, ...] = ()
    cwd: str = ""
    env: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    url: str = field(default="", repr=False)
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    # The values substituted for references, to be redacted from what the server says.
    secrets: tuple[str, ...] = field(default=(), repr=False, compare=False)


REFERENCE_HINT = (
    "write the secret part as a reference to an environment variable, e.g. ${API_TOKEN}, "
    "and set the variable in AgentDesk's environment or .env"
)


def suggested_variable(key: str) -> str:
    return re.sub(r"[^A-Z0-9_]", "_", key.upper()).strip("_") or "SECRET"


def value_problem(key: str, value: Any) -> str:
    """Why one env/header value is refused, or "" when it is fine."""
    if not isinstance(value, str):
        return "must be a string"
    literal = REFERENCE.sub("", value)
    if "${" in literal:
        return "has a malformed reference; write ${NAME} with NAME made of letters, digits and _"
    if looks_secret(key) and value and not is_reference(value):
        name = suggested_variable(key)
        return (
            "looks like a secret, so its value must be a reference to an environment "
            f'variable, e.g. "${{{name}}}" (or "Bearer ${{{name}}}"), not the secret '
            "itself; set the variable in AgentDesk's environment or .env"
        )
    if problem := literal_secret_problem(value):
        return f"{problem}; {REFERENCE_HINT}"
    return ""


def mapping_problems(value: Any, *, kind: str) -> list[tuple[str, str]]:
    """(key, message) for each problem of an env (kind "env") or headers mapping; key "" is the
    mapping itself."""
    if not isinstance(value, dict):
        return [("", "must be an object of names to strings")]
    pattern, what = (
        (ENV_NAME, "an environment variable") if kind == "env" else (HEADER_NAME, "an HTTP header")
    )
    problems = []
    for key, item in value.items():
        if not pattern.match(key):
            problems.append((key, f"is not a valid name for {what}"))
        elif problem := value_problem(key, item):
            problems.append((key, problem))
    return problems


def args_problem(value: Any) -> str:
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        return "must be a list of strings"
    for arg in value:
        if "${" in REFERENCE.sub("", arg):
            return f"'{arg}' has a malformed reference; write ${{NAME}}"
    if problems := arg_problems(value):
        return f"hold a literal secret ({'; '.join(problems)}); {REFERENCE_HINT}"
    if references := secret_arg_references(value):
        return secret_args_message(references)
    return ""


def url_problem(url: str) -> str:
    """Why a server URL is refused for holding a literal secret, or ""."""
    if problem := literal_secret_problem(url):
        return f"{problem}; {REFERENCE_HINT}"
    return ""


def is_http_url(url: str) -> bool:
    return re.match(r"^https?://[^\s/]+", url or "") is not None


def substitute(value: str, *, server: str, where: str) -> str:
    """`value` with every ${NAME} replaced from os.environ; ServerConfigError names a missing one."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        resolved = os.environ.get(name)
        if not resolved:
            raise ServerConfigError(
                f"MCP server '{server}': {where} refers to ${{{name}}}, but the environment "
                f"variable {name} is not set (or empty); set it in AgentDesk's environment or .env",
                variable=name,
            )
        return resolved

    return REFERENCE.sub(replace, value)


class MCPServerQuerySet(models.QuerySet):
    def enable(self) -> int:
        """Enable disabled servers; they are not checked until a worker or staff checks them.
        Returns how many changed."""
        return self.filter(enabled=False).update(
            enabled=True,
            status=ServerStatus.UNCHECKED,
            last_error=NOT_CHECKED_SINCE_ENABLED,
            updated_at=timezone.now(),
        )

    def disable(self) -> int:
        return self.filter(enabled=True).update(
            enabled=False, status=ServerStatus.DISABLED, updated_at=timezone.now()
        )


class MCPServer(models.Model):
    """One MCP server AgentDesk connects to. Health fields are written by checks (`mark`)."""

    name = models.CharField(max_length=50, unique=True, validators=[validate_server_name])
    transport = models.CharField(max_length=20, choices=Transport.choices, default=Transport.STDIO)
    command = models.CharField(
        max_length=1000, blank=True, help_text="stdio: the program to start, e.g. npx or uvx."
    )
    args = models.JSONField(
        default=list, blank=True, help_text='stdio: a JSON list of strings, e.g. ["-y", "pkg"].'
    )
    cwd = models.CharField(
        "working directory", max_length=1000, blank=True, help_text="stdio: blank = AgentDesk's."
    )
    env = models.JSONField(
        "environment",
        default=dict,
        blank=True,
        help_text='stdio: a JSON object, e.g. {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}. Secrets must be '
        "${VAR} references to AgentDesk's environment, never the secret itself.",
    )
    url = models.CharField(
        "URL", max_length=2000, blank=True, help_text="HTTP transports: http(s)://host/mcp"
    )
    headers = models.JSONField(
        default=dict,
        blank=True,
        help_text='HTTP transports: a JSON object, e.g. {"Authorization": "Bearer ${API_TOKEN}"}. '
        "Same rule for secrets.",
    )
    enabled = models.BooleanField(default=True)
    call_timeout = models.FloatField(
        default=DEFAULT_CALL_TIMEOUT, help_text="Seconds one tool call may take."
    )
    default_approval_level = models.CharField(
        max_length=10,
        choices=ApprovalChoices.choices,
        default=ApprovalLevel.MODERATE,
        help_text="For its tools unless a tool overrides it. MCP tools are external code.",
    )

    # Health, written by checks only. A server is unchecked until its first check, which finds
    # it active or broken (with the reason in last_error).
    status = models.CharField(
        max_length=10, choices=ServerStatus.choices, default=ServerStatus.UNCHECKED, editable=False
    )
    last_error = models.TextField(blank=True, default=NOT_CHECKED, editable=False)
    stderr_tail = models.TextField("last lines of stderr", blank=True, editable=False)
    last_checked_at = models.DateTimeField(null=True, blank=True, editable=False)
    tool_count = models.PositiveIntegerField(default=0, editable=False)

    created_at = models.DateTimeField(default=timezone.now, editable=False)
    # Changes with the configuration only; checks write through update() and leave it alone.
    updated_at = models.DateTimeField(auto_now=True)

    objects = MCPServerQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        verbose_name = "MCP server"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(call_timeout__gt=0), name="mcpserver_call_timeout_positive"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        # Status follows `enabled`: a disabled server is never active, an enabled one not disabled.
        if not self.enabled:
            self.status = ServerStatus.DISABLED
        elif self.status == ServerStatus.DISABLED:
            self.status, self.last_error = ServerStatus.UNCHECKED, NOT_CHECKED_SINCE_ENABLED
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and "enabled" in update_fields:
            kwargs["update_fields"] = {*update_fields, "status", "last_error"}
        super().save(*args, **kwargs)

    @property
    def is_http(self) -> bool:
        return self.transport in HTTP_TRANSPORTS

    def clean(self) -> None:
        errors: dict[str, list[str]] = {}

        def refuse(field_name: str, message: str) -> None:
            errors.setdefault(field_name, []).append(message)

        if self.transport == Transport.STDIO and not self.command.strip():
            refuse("command", "A stdio server needs a command to start, e.g. npx or uvx.")
        if self.is_http and not is_http_url(self.url):
            refuse("url", "An HTTP server needs an http:// or https:// URL.")
        elif problem := url_problem(self.url):
            refuse("url", f"The URL is refused: {problem}.")
        if problem := args_problem(self.args):
            refuse("args", f"args {problem}.")
        for field_name, kind in (("env", "env"), ("headers", "headers")):
            for key, problem in mapping_problems(getattr(self, field_name), kind=kind):
                refuse(field_name, f"{key}: {problem}." if key else f"{field_name} {problem}.")
        if self.call_timeout is not None and self.call_timeout <= 0:
            refuse("call_timeout", "The call timeout must be more than 0 seconds.")
        if errors:
            raise ValidationError(errors)

    def mark(
        self,
        status: str,
        *,
        error: str = "",
        stderr_tail: str | Sequence[str] = "",
        tool_count: int | None = None,
    ) -> bool:
        """Record a check's outcome (active or broken) now. Returns False and writes nothing when
        the server was disabled meanwhile: a late check never revives a disabled server."""
        if status not in (ServerStatus.ACTIVE, ServerStatus.BROKEN):
            raise ValueError(f"A check marks a server active or broken, not {status!r}")
        if not isinstance(stderr_tail, str):
            stderr_tail = "\n".join(stderr_tail)
        # Redacted before it is cut, so no secret survives in part at the cut.
        secrets = self.referenced_values()
        stderr_tail = redact(stderr_tail, secrets)
        tail = "\n".join(stderr_tail.splitlines()[-STDERR_TAIL_LINES:])[-STDERR_TAIL_CHARS:]
        values: dict[str, Any] = {
            "status": status,
            "last_error": redact(error, secrets),
            "stderr_tail": tail,
            "last_checked_at": timezone.now(),
        }
        if tool_count is not None:
            values["tool_count"] = tool_count
        if MCPServer.objects.filter(pk=self.pk, enabled=True).update(**values) != 1:
            return False
        for name, value in values.items():
            setattr(self, name, value)
        return True

    def referenced_values(self) -> tuple[str, ...]:
        """The values of the environment variables this server's configuration refers to (those
        that are set): what a check or a session must never store, log or show."""
        texts = [*self.args, *self.env.values(), self.url, *self.headers.values()]
        names = sorted(
            {n for text in texts if isinstance(text, str) for n in REFERENCE.findall(text)}
        )
        return tuple(value for name in names if (value := os.environ.get(name)))

    def secret_values(self) -> tuple[str, ...]:
        """The referenced values that are secrets: a variable named like one, or a reference in
        a secret's env value or header, or a secret's option."""
        names = {n for n in REFERENCE.findall(self.url) if secret_variable(n)}
        for mapping in (self.env, self.headers):
            for key, value in mapping.items():
                if isinstance(value, str):
                    found = REFERENCE.findall(value)
                    names.update(found if looks_secret(key) else [])
                    names.update(n for n in found if secret_variable(n))
        names.update(name for _, name in secret_arg_references(self.args))
        return tuple(value for name in sorted(names) if (value := os.environ.get(name)))

    def resolved_args(self) -> tuple[str, ...]:
        """The args with references substituted; ServerConfigError when one is a secret's (a
        row saved before they were refused): it would be on the process's command line."""
        if references := secret_arg_references(self.args):
            raise ServerConfigError(
                f"MCP server '{self.name}': args {secret_args_message(references)}",
                variable=references[0][1],
            )
        return tuple(
            substitute(arg, server=self.name, where=f"args[{i}]") for i, arg in enumerate(self.args)
        )

    def resolved_env(self) -> dict[str, str]:
        return {
            key: substitute(value, server=self.name, where=f"env {key}")
            for key, value in self.env.items()
        }

    def resolved_url(self) -> str:
        return substitute(self.url, server=self.name, where="the URL")

    def resolved_headers(self) -> dict[str, str]:
        return {
            key: substitute(value, server=self.name, where=f"header {key}")
            for key, value in self.headers.items()
        }

    def spec(self) -> ServerConfig:
        """The connection settings with references substituted; ServerConfigError when a
        referenced variable is unset. Fields of the other transport are left empty."""
        stdio = self.transport == Transport.STDIO
        secrets = self.referenced_values()
        # From now on this process hides those that are secrets from everything it stores,
        # logs or shows (not an org name: everything would lose it).
        secret_register(*self.secret_values())
        return ServerConfig(
            name=self.name,
            transport=self.transport,
            command=self.command if stdio else "",
            args=self.resolved_args() if stdio else (),
            cwd=self.cwd if stdio else "",
            env=tuple(self.resolved_env().items()) if stdio else (),
            url="" if stdio else self.resolved_url(),
            headers=() if stdio else tuple(self.resolved_headers().items()),
            call_timeout=self.call_timeout,
            secrets=secrets,
        )


class ToolSource(models.TextChoices):
    BUILTIN = "builtin"
    MCP = "mcp", "MCP server"


class CapabilityOrigin(models.TextChoices):
    """Where a tool's capabilities, domain and side effects came from; re-discovery refreshes
    them unless staff edited them."""

    INFERRED = "inferred", "inferred from its name and schema"
    DECLARED = "declared", "declared by the tool"
    STAFF = "staff", "edited by staff"


class PinStatus(models.TextChoices):
    """Whether an MCP tool is the version staff approved (its pin), or its server now offers
    another one that waits for staff's review (withheld from every model meanwhile)."""

    PINNED = "pinned"
    CHANGED = "changed", "changed — needs review"


CAPABILITY_NAME = re.compile(r"^[A-Z][A-Z0-9_]*\Z")
validate_domain = RegexValidator(
    r"^[a-z0-9][a-z0-9_-]*\Z", "Use lower-case letters, digits, '_' and '-', e.g. file_operations."
)


class Tool(models.Model):
    """A tool agents may use: builtin, or offered by an MCP server as `<server>.<tool>`."""

    server = models.ForeignKey(
        MCPServer, null=True, blank=True, on_delete=models.CASCADE, related_name="tools"
    )
    source = models.CharField(max_length=10, choices=ToolSource.choices, editable=False)
    name = models.CharField(max_length=200, unique=True, editable=False)
    remote_name = models.CharField(
        max_length=TOOL_NAME_MAX,
        blank=True,
        editable=False,
        help_text="The tool's own name on its MCP server.",
    )
    # An MCP tool's description, input schema and annotations are the pinned version: what
    # staff approved (or what its server first offered), never overwritten by discovery.
    description = models.TextField(blank=True, editable=False)
    input_schema = models.JSONField(default=dict, blank=True, editable=False)
    annotations = models.JSONField(default=dict, blank=True, editable=False)
    # sha256 of the canonical JSON of name, description, input_schema and annotations
    # (tools_app.mcp.pins); blank for builtin tools. Approval rules are bound to it.
    pinned_sha256 = models.CharField(max_length=64, blank=True, editable=False)
    pin_status = models.CharField(
        max_length=10, choices=PinStatus.choices, default=PinStatus.PINNED, editable=False
    )
    # What the server offers now when it differs from the pin, waiting for review.
    pending_description = models.TextField(blank=True, editable=False)
    pending_input_schema = models.JSONField(default=dict, blank=True, editable=False)
    pending_annotations = models.JSONField(default=dict, blank=True, editable=False)
    pending_sha256 = models.CharField(max_length=64, blank=True, editable=False)
    changed_at = models.DateTimeField(null=True, blank=True, editable=False)
    capabilities = models.JSONField(default=list, blank=True)
    domain = models.CharField(max_length=50, blank=True, validators=[validate_domain])
    side_effects = models.CharField(
        max_length=20, choices=SideEffectChoices.choices, default=SideEffects.EXTERNAL
    )
    capabilities_origin = models.CharField(
        max_length=10,
        choices=CapabilityOrigin.choices,
        default=CapabilityOrigin.INFERRED,
        editable=False,
    )
    enabled = models.BooleanField(default=True)
    approval_level = models.CharField(
        max_length=10,
        choices=ApprovalChoices.choices,
        blank=True,
        help_text="Blank: the server's default (MCP tools) or the tool's own (builtin tools).",
    )
    waits = models.BooleanField(
        default=False,
        help_text="It waits for something outside the run (a sleep, an event): never offered "
        "to a micro agent. Tools named sleep, wait, wait_for_… are taken as waiting anyway.",
    )
    # A builtin tool's own approval level, from its ToolSpec; blank for MCP tools.
    default_approval_level = models.CharField(max_length=10, blank=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(source=ToolSource.BUILTIN, server__isnull=True)
                    | models.Q(source=ToolSource.MCP, server__isnull=False)
                ),
                name="tool_server_matches_source",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def needs_review(self) -> bool:
        return self.pin_status == PinStatus.CHANGED

    @property
    def capabilities_inferred(self) -> bool:
        return self.capabilities_origin == CapabilityOrigin.INFERRED

    @property
    def effective_approval_level(self) -> str:
        if self.approval_level:
            return self.approval_level
        if self.server_id is not None:
            return self.server.default_approval_level
        return self.default_approval_level or ApprovalLevel.AUTO

    def clean(self) -> None:
        caps = self.capabilities
        if not isinstance(caps, list) or not all(
            isinstance(c, str) and CAPABILITY_NAME.match(c) for c in caps
        ):
            raise ValidationError(
                {"capabilities": "Capabilities are upper-case names such as FILE_READ or SEARCH."}
            )

    def tool_spec(self) -> ToolSpec:
        """This row as the registry describes a tool, staff edits applied."""
        return ToolSpec(
            name=self.name,
            description=self.description,
            input_schema=self.input_schema,
            capabilities=frozenset(self.capabilities),
            domain=self.domain,
            approval_level=self.effective_approval_level,
            side_effects=self.side_effects,
            timeout=self.server.call_timeout if self.server_id else DEFAULT_CALL_TIMEOUT,
            source=self.source,
            waits=self.waits,
            pinned_sha256=self.pinned_sha256,
            read_only_pinned=self.side_effects == SideEffects.READ_ONLY
            and (
                self.capabilities_origin == CapabilityOrigin.STAFF
                or (self.annotations or {}).get("read_only_hint") is True
            ),
        )
