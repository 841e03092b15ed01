"""The audit log: who did what, through which interface, to which run. Append-only.

Every agent action and every human act calls `audit_record` inside the transaction of the
change it describes, so the row commits (or rolls back) with that change. Nothing in the
product changes or deletes an AuditEvent: the model, its queryset and the admin refuse.

Interfaces: `web` (the pages), `api` (REST), `mcp` (AgentDesk's own MCP server at /mcp: a
value of its own rather than `api`, so a reader can tell an MCP client from a REST script),
`admin`, `worker` (the engine, actor None, shown as "worker").

Actions so far (a new act adds its name here and calls audit_record; no migration needed):
- `llm.call` (worker): target the model; details model, prompt_tokens, completion_tokens,
  step_index (None while analysing, planning or verifying).
- `tool.call` (worker): target the tool; details tool_call_id, step_index, arguments_sha256
  (see `arguments_sha256`), outcome succeeded | failed, error_code, duration_ms.
- `task.submit`: the new run; details task_id.
- `run.cancel`: the run; details status_before, ended_at_once.
- `run.restart`: the run restarted (the old attempt); details new_run_id, attempt.
- `run.replay`: the run replayed (the source); details replay_run_id, rerun (the tools its
  replay runs again instead of answering them from the record).
- `run.pause` / `run.resume`: the run (a team's children each get their own); details
  status_before / resumed (false while the kill switch holds it).
- `kill_switch.engage` / `kill_switch.release` (admin): details reason, was_engaged,
  resumed_runs (the paused runs a release queued again).
- `mcp_server.enable` / `mcp_server.disable` (admin): target the server; details changed.
- `mcp_server.check` (admin): target the server; details status, error.
- `mcp_server.import` (admin): target each server named in the file; details file, change
  created | updated | unchanged.
- `mcp_tool.changed` (worker): an MCP tool's server offers a version other than its pin; the
  tool waits for staff's review; target the tool; details pinned_sha256, offered_sha256,
  fields (description, input_schema, annotations: those that differ).
- `mcp_tool.restored` (worker): the server offers the pinned version again; details
  pinned_sha256, withdrawn_sha256.
- `mcp_tool.pin_approve` (admin or api): staff approved the version a changed tool offers;
  target the tool; details old_sha256, new_sha256, derived (the fields derived anew).
- `webhook.create` / `webhook.delete`: target the URL; details webhook_id, events.
- `approval.request` (worker): a call (or plan) waits for a person; target the tool ("plan");
  details approval_id, kind, tool_call_id, arguments_sha256, risk, level, expires_at.
- `approval.decide`: target the tool; details approval_id, decision, arguments_sha256 (of the
  arguments that will run), remember, expired (true: its timeout decided; actor "worker").
- `approval_rule.create` / `approval_rule.revoke`: target the tool; details rule_id, exact,
  arguments_sha256.
- `yolo.grant` / `yolo.revoke` (admin, target the user) and `yolo.enable` / `yolo.disable`
  (the user).
- `api_key.create` / `api_key.revoke` (a person on the Settings page): target the key's name;
  details api_key_id, prefix (never the key).
- `conversation.create`: target the conversation id; details connection_id, double_texting.
- `conversation.message`: the answer run it started or joined (None while it waits); target
  the conversation id; details entry_id, mode, outcome answered | queued | steered.
- `conversation.stop`: the running answer (None when idle); target the conversation id;
  details held (the waiting messages that will not be answered).
- `conversation.update`: target the conversation id; details fields (the names changed).
- `agent.create`: target the contract agent's id; details name, connection_id.
- `agent.start`: the attempt's run; target the agent's id; details attempt, restart.
- `agent.stop`: the attempt's run; target the agent's id.
- `agent.update`: target the agent's id; details fields (the names of those changed).
- `login.fail` (web or admin, actor "anonymous"): a refused sign-in; target the account name
  tried; details address (never the password). `login.throttle`: the first attempt of a
  window refused for too many failures; details address, retry_after_seconds (core/throttle).
- `api_key.refuse` (api or mcp, actor "anonymous"): a bearer key that authenticates nobody;
  details address, api_key_id (a revoked key's, or one whose owner is inactive; else None).
"""

import hashlib
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

from channels.db import database_sync_to_async
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet

from agents_app.core import rows
from agents_app.core.secrecy import redact, redact_all
from agents_app.models import AuditEvent, AuditInterface, Run

# AuditInterface.values builds its list anew at each look.
INTERFACES = frozenset(AuditInterface.values)

LLM_CALL = "llm.call"
TOOL_CALL = "tool.call"
TASK_SUBMIT = "task.submit"
RUN_CANCEL = "run.cancel"
RUN_RESTART = "run.restart"
RUN_FORK = "run.fork"
RUN_REPLAY = "run.replay"
RUN_PAUSE = "run.pause"
RUN_RESUME = "run.resume"
KILL_SWITCH_ENGAGE = "kill_switch.engage"
KILL_SWITCH_RELEASE = "kill_switch.release"
MCP_SERVER_ENABLE = "mcp_server.enable"
MCP_SERVER_DISABLE = "mcp_server.disable"
MCP_SERVER_CHECK = "mcp_server.check"
MCP_SERVER_IMPORT = "mcp_server.import"
MCP_TOOL_CHANGED = "mcp_tool.changed"
MCP_TOOL_RESTORED = "mcp_tool.restored"
MCP_TOOL_PIN_APPROVE = "mcp_tool.pin_approve"
WEBHOOK_CREATE = "webhook.create"
WEBHOOK_DELETE = "webhook.delete"
APPROVAL_REQUEST = "approval.request"
APPROVAL_DECIDE = "approval.decide"
APPROVAL_RULE_CREATE = "approval_rule.create"
APPROVAL_RULE_REVOKE = "approval_rule.revoke"
YOLO_GRANT = "yolo.grant"
YOLO_REVOKE = "yolo.revoke"
YOLO_ENABLE = "yolo.enable"
YOLO_DISABLE = "yolo.disable"
API_KEY_CREATE = "api_key.create"
API_KEY_REVOKE = "api_key.revoke"
CONVERSATION_CREATE = "conversation.create"
CONVERSATION_MESSAGE = "conversation.message"
CONVERSATION_STOP = "conversation.stop"
CONVERSATION_UPDATE = "conversation.update"
AGENT_CREATE = "agent.create"
AGENT_START = "agent.start"
AGENT_STOP = "agent.stop"
AGENT_UPDATE = "agent.update"

WORKER_LABEL = "worker"
SYSTEM_LABEL = "system"
EXPORT_BATCH = 1000
TARGET_MAX_CHARS = AuditEvent._meta.get_field("target").max_length


def audit_record(
    *,
    action: str,
    interface: str,
    actor: AbstractBaseUser | None = None,
    run: Run | None = None,
    run_id: int | None = None,
    target: str = "",
    details: dict[str, Any] | None = None,
    actor_label: str | None = None,
) -> AuditEvent:
    """Append one AuditEvent in the caller's transaction and return it.

    `interface` is one of AuditInterface; `actor` a saved user, or None for the worker
    (labelled "worker") or the system (labelled "system"), or `actor_label` for someone not
    signed in ("anonymous"). Give the run as `run` or `run_id`.
    Raises ValueError for an unknown interface, an empty action, an unsaved or anonymous
    actor, or a `run` and `run_id` that disagree."""
    event = audit_event(
        action=action,
        interface=interface,
        actor=actor,
        run=run,
        run_id=run_id,
        target=target,
        details=details,
        actor_label=actor_label,
    )
    rows.insert([event], ids=True)  # the short way: one statement, no compiler (core.rows)
    return event


def audit_event(
    *,
    action: str,
    interface: str,
    actor: AbstractBaseUser | None = None,
    run: Run | None = None,
    run_id: int | None = None,
    target: str = "",
    details: dict[str, Any] | None = None,
    actor_label: str | None = None,
) -> AuditEvent:
    """The AuditEvent `audit_record` would append, not saved yet: for a caller that writes
    several at once (`AuditEvent.objects.bulk_create`). Raises as `audit_record` does."""
    if interface not in INTERFACES:
        raise ValueError(f"Unknown audit interface {interface!r}")
    if not action:
        raise ValueError("An audit event needs an action")
    if actor is not None and actor.pk is None:
        raise ValueError("The actor must be a saved user, or None for the worker or system")
    if run is not None:
        if run_id is not None and run_id != run.pk:
            raise ValueError(f"run {run.pk} and run_id {run_id} disagree")
        run_id = run.pk
    if actor is not None:
        label = actor.get_username()
    elif actor_label:
        label = actor_label
    else:
        label = WORKER_LABEL if interface == AuditInterface.WORKER else SYSTEM_LABEL
    return rows.new(
        AuditEvent,
        action=action,
        interface=interface,
        actor=actor,
        actor_label=label,
        run_id=run_id,
        target=redact(target)[:TARGET_MAX_CHARS],
        details=redact_all(details or {}),
    )


def arguments_sha256(arguments: Any) -> str:
    """SHA-256 (hex) of the canonical JSON of a tool call's arguments: keys sorted, no
    whitespace (separators "," and ":"), non-ASCII as UTF-8, not escaped. Anyone holding the
    arguments (e.g. ToolCall.arguments) can recompute it."""
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _export_page(queryset: QuerySet[AuditEvent], after: int) -> tuple[list[str], int]:
    events = list(queryset.order_by("pk").filter(pk__gt=after)[:EXPORT_BATCH])
    lines = [json.dumps(event.as_json(), ensure_ascii=False) + "\n" for event in events]
    return lines, events[-1].pk if events else after


def export_lines(queryset: QuerySet[AuditEvent]) -> Iterator[str]:
    """The rows of `queryset` as JSON lines, oldest first, read in pages of EXPORT_BATCH (by
    primary key, so memory stays flat however long the log is)."""
    after = 0
    while True:
        lines, after = _export_page(queryset, after)
        if not lines:
            return
        yield from lines


async def export_lines_async(queryset: QuerySet[AuditEvent]) -> AsyncIterator[str]:
    """`export_lines` for an ASGI response, which would otherwise read a sync iterator whole
    into memory before sending the first byte."""
    after = 0
    while True:
        lines, after = await database_sync_to_async(_export_page)(queryset, after)
        if not lines:
            return
        for line in lines:
            yield line
