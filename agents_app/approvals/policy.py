"""Asking people: which calls need a decision (policy), and parking a run on one.

The worker side only. A call is classified (tools_app.risk); `manual` always asks, `moderate`
asks unless the owner has a rule for it, `auto` runs, and YOLO mode (a staff-granted
permission the user turned on) runs everything. A call that asks parks its run: an Approval
row, the step's conversation saved on the Step, the run `waiting_approval`, an event, the
`approval.required` webhooks, and the worker returns. Decisions live in approvals.decisions.
"""

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model

from agents_app.approvals.patterns import pattern_matches
from agents_app.core.audit import arguments_sha256
from agents_app.engine.taint import Taint
from agents_app.models import (
    ApprovalRule,
    UserPreferences,
)
from tools_app.mcp.pins import tool_pinned_sha256
from tools_app.registry import ApprovalLevel, SideEffects, ToolSpec
from tools_app.risk import Classification, classify_call

YOLO_PERMISSION = "agents_app.use_yolo_mode"
REASONING_MAX_CHARS = 8000


@dataclass(frozen=True)
class Ask:
    """Why a call waits for a person."""

    classification: Classification
    reason: str
    schema: dict[str, Any]
    # The arguments that carry untrusted text, and where it came from (approvals.provenance).
    taints: tuple[Taint, ...] = ()


def yolo_active(user: Any) -> bool:
    """YOLO runs only while the user turned it on and still holds the permission."""
    if user is None or not user.is_active:
        return False
    on = UserPreferences.objects.filter(user=user, yolo=True).exists()
    return on and user.has_perm(YOLO_PERMISSION)


def is_sink(spec: ToolSpec, classification: Classification) -> bool:
    """A call that reaches the network, runs code, writes outside the run's workspace, or is
    an MCP tool not pinned read-only (its pinned readOnlyHint or staff say so, not a guess
    from its name): where untrusted text must not lead alone."""
    if classification.risk in (SideEffects.EXTERNAL, SideEffects.CODE_EXECUTION):
        return True
    return spec.source == "mcp" and not spec.read_only_pinned


def approval_policy(
    owner_id: int,
    spec: ToolSpec,
    arguments: dict[str, Any],
    workspace: Path,
    *,
    taints: Callable[[], list[Taint]] | None = None,
):
    """(Ask or None, how the call was let through: auto | rule | pattern | yolo).

    A sink call whose arguments carry untrusted text (`taints`, looked up only for sinks)
    asks whatever its level, rule or YOLO, unless a pattern rule of the owner fits it (then
    the rest decides as for any call: a manual tool still asks)."""
    classification = classify_call(spec, arguments, workspace)
    found = taints() if taints is not None and is_sink(spec, classification) else []
    # The owner's rules and whether a pattern rule fits: each looked up once, when needed.
    rules_of = cache(lambda: _rules(owner_id, spec))
    pattern_fits = cache(lambda: _pattern_rule(rules_of(), arguments))
    if found and not pattern_fits():
        first = found[0]
        reason = (
            f"argument '{first.argument}' carries {first.kind} {first.fragment[:80]!r} "
            f"from {first.source.label}'s output, not from you"
        )
        return Ask(classification, reason, spec.input_schema, tuple(found)), ""
    if not classification.needs_person:
        return None, "auto"
    owner = get_user_model().objects.filter(pk=owner_id).first()
    if yolo_active(owner):
        return None, "yolo"
    if classification.level == ApprovalLevel.MANUAL:
        return Ask(classification, "manual: this call always asks", spec.input_schema), ""
    rules = rules_of()
    if rules is not None:
        whole = rules.filter(pattern_kind="")
        if whole.filter(arguments_sha256__in=["", arguments_sha256(arguments)]).exists():
            return None, "rule"
        if pattern_fits():
            return None, "pattern"
    return Ask(classification, "moderate: no rule of yours allows it", spec.input_schema), ""


def _rules(owner_id: int, spec: ToolSpec) -> Any:
    """The owner's rules for the version of the tool they were made for (tools_app.mcp.pins);
    None while the tool waits for review (no rule lets it through). Asked for only when a rule
    could decide: an `auto` call that carries nothing untrusted costs no query."""
    version = tool_pinned_sha256(spec.name)
    if version is None:
        return None
    return ApprovalRule.objects.filter(owner_id=owner_id, tool=spec.name, tool_sha256=version)


def _pattern_rule(rules: Any, arguments: dict[str, Any]) -> bool:
    """Whether one of `rules` narrowed to an argument pattern fits the call."""
    if rules is None:
        return False
    return any(
        pattern_matches(kind, pattern, arguments)
        for kind, pattern in rules.exclude(pattern_kind="").values_list("pattern_kind", "pattern")
    )


def timeout_policy(task: Any) -> tuple[float, str]:
    """(seconds an approval waits, or 0 for ever; what its expiry decides)."""
    seconds = task.approval_timeout if task.approval_timeout is not None else None
    if seconds is None:
        seconds = settings.APPROVAL_TIMEOUT
    return float(seconds), task.approval_on_timeout or settings.APPROVAL_TIMEOUT_STRATEGY
