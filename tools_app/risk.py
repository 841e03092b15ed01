"""How risky one call is, from the tool's metadata and the call's arguments (seed 004's
classifier). Pure: no I/O.

A tool's `side_effects` says what it can touch; the arguments can only raise that: a URL
reaches outside, a command-like argument runs code, a path outside the workspace is not a
workspace write. Each risk class has the lowest approval level it deserves, and the higher of
that and the tool's own level decides.
"""

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from tools_app.registry import ApprovalLevel, SideEffects, ToolSpec

RISK_ORDER = (
    SideEffects.READ_ONLY,
    SideEffects.WORKSPACE_WRITE,
    SideEffects.EXTERNAL,
    SideEffects.CODE_EXECUTION,
)
LEVEL_ORDER = (ApprovalLevel.AUTO, ApprovalLevel.MODERATE, ApprovalLevel.MANUAL)
# The least a call of each risk class must pass through.
RISK_LEVEL = {
    SideEffects.READ_ONLY: ApprovalLevel.AUTO,
    SideEffects.WORKSPACE_WRITE: ApprovalLevel.AUTO,
    SideEffects.EXTERNAL: ApprovalLevel.MODERATE,
    SideEffects.CODE_EXECUTION: ApprovalLevel.MANUAL,
}
CODE_KEYS = frozenset(
    {"command", "cmd", "commands", "script", "code", "shell", "program", "exec", "eval"}
)
PATH_KEYS = frozenset(
    {"path", "paths", "file", "filename", "filepath", "directory", "dir", "source", "destination"}
)
URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
MAX_DEPTH = 6


@dataclass(frozen=True)
class Classification:
    risk: str
    level: str
    reasons: tuple[str, ...]

    @property
    def needs_person(self) -> bool:
        return self.level != ApprovalLevel.AUTO


def higher(a: str, b: str, order: tuple[str, ...]) -> str:
    return a if order.index(a) >= order.index(b) else b


def classify_call(
    spec: ToolSpec, arguments: dict[str, Any], workspace: PurePosixPath | None = None
) -> Classification:
    """The call's risk class and the approval level that applies, with the reasons."""
    risk = spec.side_effects if spec.side_effects in RISK_ORDER else SideEffects.EXTERNAL
    reasons = [f"the tool's side effects: {risk}"]
    for key, value in _leaves(arguments):
        if not isinstance(value, str) or not value.strip():
            continue
        raised = _raised_by(key.lower(), value, spec, workspace)
        if raised is not None and RISK_ORDER.index(raised[0]) > RISK_ORDER.index(risk):
            risk = raised[0]
            reasons.append(f"argument '{key}' {raised[1]}")
    # A sandboxed tool's code runs confined to the workspace: its own level (manual unless
    # staff lowered it) decides, not the floor of code that runs unconfined.
    floor = spec.approval_level if spec.sandboxed else RISK_LEVEL[risk]
    level = higher(spec.approval_level, floor, LEVEL_ORDER)
    if level != spec.approval_level:
        reasons.append(f"{risk} calls need at least '{RISK_LEVEL[risk]}'")
    return Classification(risk=risk, level=level, reasons=tuple(reasons))


def _raised_by(
    name: str, value: str, spec: ToolSpec, workspace: PurePosixPath | None
) -> tuple[str, str] | None:
    """The risk one argument implies on its own, and why; None when it implies nothing."""
    if name in CODE_KEYS:
        return SideEffects.CODE_EXECUTION, "looks like code to run"
    if URL.match(value) and not value.lower().startswith("file:"):
        return SideEffects.EXTERNAL, f"reaches {value[:80]}"
    # Builtin tools confine paths to the run's workspace themselves.
    if name in PATH_KEYS and spec.source != "builtin" and _escapes(value, workspace):
        return SideEffects.EXTERNAL, "points outside the workspace"
    return None


def _escapes(value: str, workspace: PurePosixPath | None) -> bool:
    path = PurePosixPath(value)
    if ".." in path.parts:
        return True
    if not path.is_absolute():
        return False
    return workspace is None or not path.is_relative_to(workspace)


def _leaves(value: Any, key: str = "", depth: int = 0) -> Iterator[tuple[str, Any]]:
    if depth > MAX_DEPTH:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, str(k), depth + 1)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item, key, depth + 1)
    else:
        yield key, value


URL_KEYS = frozenset({"url", "uri", "href", "link", "endpoint"})


def least_level(
    *, approval_level: str, side_effects: str, schema: dict[str, Any]
) -> tuple[str, tuple[str, ...]]:
    """The level every call of a tool passes through at least, whatever values it is given,
    and why that is above its configured `approval_level` (the Tools page; classify_call
    decides each call). A required argument that is code, or a URL, raises every call."""
    risk = side_effects if side_effects in RISK_ORDER else SideEffects.EXTERNAL
    reasons = []
    if RISK_LEVEL[risk] != ApprovalLevel.AUTO:
        reasons.append(f"its side effects are {risk}")
    properties = schema.get("properties") if isinstance(schema, dict) else None
    required = set(schema.get("required") or ()) if isinstance(schema, dict) else set()
    for name in sorted(required & set(properties or {})):
        spec = properties[name] if isinstance(properties[name], dict) else {}
        raised = None
        if name.lower() in CODE_KEYS:
            raised = SideEffects.CODE_EXECUTION, f"every call's '{name}' is code to run"
        elif name.lower() in URL_KEYS or spec.get("format") in ("uri", "url"):
            raised = SideEffects.EXTERNAL, f"every call's '{name}' reaches outside the machine"
        if raised and RISK_ORDER.index(raised[0]) > RISK_ORDER.index(risk):
            risk = raised[0]
            reasons.append(raised[1])
    level = higher(approval_level, RISK_LEVEL[risk], LEVEL_ORDER)
    return level, tuple(reasons) if level != approval_level else ()
