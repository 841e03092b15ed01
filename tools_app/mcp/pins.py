"""Pinned MCP tools (issue 35): a tool is the version staff approved, identified by a hash.

What is pinned: the tool's own name, description, input schema and annotations, hashed over
their canonical JSON (`pin_sha256`). A tool a server offers for the first time is pinned as it
is (staff added the server: that is the approval). When a later discovery finds another
version, the pinned copy stays on the row, the new one is kept beside it as pending, the tool
is marked "changed — needs review" and withheld from every model (`Tool.needs_review`), and
`tool_changed` is sent once the change commits (agents_app.approvals expires the approvals
pending on it). Staff approve the new version on the admin's review page (`tool_pin_approve`),
which shows the diff (`pin_diff`). Approval rules are bound to the hash they were made for.

tools_app sits below agents_app's domain packages, so it tells them through signals it owns,
received in agents_app.approvals.pins.
"""

import difflib
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.dispatch import Signal
from django.utils import timezone

from agents_app.core.audit import (
    MCP_TOOL_CHANGED,
    MCP_TOOL_PIN_APPROVE,
    MCP_TOOL_RESTORED,
    AuditInterface,
    audit_record,
)
from agents_app.core.errors import DomainError, ErrorCode
from tools_app.models import PinStatus, Tool, ToolSource

# Sent on commit with tool (its name), old_sha256 (the pin) and new_sha256 (what the server
# offers now): the tool waits for review; what was pending on it must not go on.
tool_changed = Signal()
# Sent on commit with tool, old_sha256 and new_sha256 when the pin's hash moved without a new
# version: a tool pinned before annotations were kept took its server's annotations once.
tool_rehashed = Signal()

PENDING_FIELDS = (
    "pending_description",
    "pending_input_schema",
    "pending_annotations",
    "pending_sha256",
)


def pin_sha256(
    name: str, description: str, input_schema: Any, annotations: Mapping[str, Any] | None
) -> str:
    """The hash of one version of a tool: sha256 of the canonical JSON (sorted keys, no
    spaces, UTF-8) of its own name, description, input schema and annotations."""
    canonical = json.dumps(
        {
            "name": name,
            "description": description,
            "input_schema": input_schema,
            "annotations": dict(annotations or {}),
        },
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def tool_pinned_sha256(name: str) -> str | None:
    """The version of tool `name` that approval rules must be bound to: its pin; "" for a
    builtin tool (or one without a row); None while it waits for review (no rule matches)."""
    pin = Tool.objects.filter(name=name).values_list("pin_status", "pinned_sha256").first()
    if pin is None:
        return ""
    return pin[1] if pin[0] == PinStatus.PINNED else None


def pin_new(row: Tool, *, description: str, input_schema: Any, annotations: dict) -> None:
    """Pin a tool first seen as it is offered (the row is not saved here)."""
    row.description, row.input_schema, row.annotations = description, input_schema, annotations
    row.pinned_sha256 = pin_sha256(row.remote_name, description, input_schema, annotations)
    row.pin_status = PinStatus.PINNED


def pin_observe(
    row: Tool, *, description: str, input_schema: Any, annotations: dict
) -> tuple[list[str], bool]:
    """Compare what the server offers now with the row's pin. Returns the fields it set on
    `row` and whether the pinned version (description, schema, annotations) is what the server
    offers: only then may discovery refresh what it derives from them. A difference is kept
    as pending, marks the tool changed, is audited as `mcp_tool.changed` and sends
    `tool_changed` on commit (once per new version, not at every reconnect)."""
    offered = pin_sha256(row.remote_name, description, input_schema, annotations)
    if not row.pinned_sha256 and (row.description, row.input_schema) == (
        description,
        input_schema,
    ):
        # Pinned as it was when pinning shipped (migration 0005), before annotations were
        # kept: the server's annotations complete that version, and rules made for it follow.
        old = row.pinned_sha256
        row.annotations, row.pinned_sha256 = annotations, offered
        _on_commit(tool_rehashed, row.name, old, offered)
        return ["annotations", "pinned_sha256"], True
    if offered == row.pinned_sha256:
        if row.pin_status == PinStatus.PINNED:
            return [], True
        # The server offers the pinned version again: nothing is left to review.
        audit_record(
            action=MCP_TOOL_RESTORED,
            interface=AuditInterface.WORKER,
            target=row.name,
            details={"pinned_sha256": row.pinned_sha256, "withdrawn_sha256": row.pending_sha256},
        )
        _clear_pending(row)
        return [*PENDING_FIELDS, "pin_status"], True
    if row.pin_status == PinStatus.CHANGED and row.pending_sha256 == offered:
        return [], False
    row.pin_status = PinStatus.CHANGED
    row.pending_description, row.pending_input_schema = description, input_schema
    row.pending_annotations, row.pending_sha256 = annotations, offered
    row.changed_at = timezone.now()
    audit_record(
        action=MCP_TOOL_CHANGED,
        interface=AuditInterface.WORKER,
        target=row.name,
        details={
            "pinned_sha256": row.pinned_sha256,
            "offered_sha256": offered,
            "fields": changed_fields(row),
        },
    )
    _on_commit(tool_changed, row.name, row.pinned_sha256, offered)
    return [*PENDING_FIELDS, "pin_status", "changed_at"], False


def _clear_pending(row: Tool) -> None:
    row.pin_status = PinStatus.PINNED
    row.pending_description, row.pending_input_schema = "", {}
    row.pending_annotations, row.pending_sha256 = {}, ""


def _on_commit(signal: Signal, tool: str, old: str, new: str) -> None:
    transaction.on_commit(
        lambda: signal.send(sender=Tool, tool=tool, old_sha256=old, new_sha256=new)
    )


def changed_fields(row: Tool) -> list[str]:
    """Which of description, input_schema and annotations the pending version changes."""
    return [
        name
        for name in ("description", "input_schema", "annotations")
        if getattr(row, name) != getattr(row, f"pending_{name}")
    ]


@transaction.atomic
def tool_pin_approve(*, tool_id: int, expected_sha256: str, actor: Any, interface: str) -> Tool:
    """Staff approve the version a changed tool's server offers: it becomes the pin and the
    tool is offered again (capabilities and side effects derived anew unless staff set them).
    Rules made for the earlier version stay bound to it. Audited as `mcp_tool.pin_approve`
    with both hashes. Returns the tool. Raises NOT_FOUND, or CONFLICT when the tool is not
    changed or its pending version is no longer `expected_sha256` (the page was stale)."""
    from tools_app.mcp.discovery import derived_fields

    row = Tool.objects.select_for_update().filter(pk=tool_id, source=ToolSource.MCP).first()
    if row is None:
        raise DomainError(ErrorCode.NOT_FOUND, f"MCP tool {tool_id} not found")
    if row.pin_status != PinStatus.CHANGED or row.pending_sha256 != expected_sha256:
        raise DomainError(
            ErrorCode.CONFLICT,
            f"{row.name} has no pending version {expected_sha256[:12]} to approve",
            {"pin_status": row.pin_status, "pending_sha256": row.pending_sha256},
        )
    old = row.pinned_sha256
    row.description, row.input_schema = row.pending_description, row.pending_input_schema
    row.annotations, row.pinned_sha256 = row.pending_annotations, row.pending_sha256
    _clear_pending(row)
    row.changed_at = None
    derived = derived_fields(row)
    row.save()
    audit_record(
        action=MCP_TOOL_PIN_APPROVE,
        interface=interface,
        actor=actor,
        target=row.name,
        details={"old_sha256": old, "new_sha256": row.pinned_sha256, "derived": derived},
    )
    return row


def _pretty(value: Any) -> list[str]:
    if isinstance(value, str):
        return value.splitlines()
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def pin_diff(row: Tool) -> list[dict[str, Any]]:
    """The pending version against the pin, per field: {field, changed, unified, table}, the
    unified diff as text and as difflib's HTML side-by-side table (its text escaped)."""
    fields = []
    for name in ("description", "input_schema", "annotations"):
        old, new = _pretty(getattr(row, name)), _pretty(getattr(row, f"pending_{name}"))
        fields.append(
            {
                "field": name,
                "changed": old != new,
                "unified": "\n".join(
                    difflib.unified_diff(old, new, "pinned", "offered now", lineterm="")
                ),
                "table": difflib.HtmlDiff(wrapcolumn=70).make_table(
                    old, new, "pinned", "offered now", context=True
                ),
            }
        )
    return fields
