"""DatabaseHooks: the engine's window on the world, backed by the run's rows.

What the engine reports waits in the worker's PendingWrites and is written by its next commit
(worker.commits). A tool call's row is written, and committed, before the call. Every commit
holds the worker's Turn, which a parallel plan's steps share (worker.parallel).
"""

import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from agents_app.approvals.policy import Ask, approval_policy
from agents_app.approvals.provenance import call_taints
from agents_app.conversations.services import REPLAY_TURN
from agents_app.core import rows
from agents_app.core.audit import LLM_CALL, TOOL_CALL, arguments_sha256, audit_event
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.event_payloads import (
    LlmRetryPayload,
    LlmUsagePayload,
    MessageSteeredPayload,
    ToolCallPayload,
    ToolResultPayload,
)
from agents_app.core.events import EventType, publish, run_group
from agents_app.core.inputs import storable, storable_text
from agents_app.core.secrecy import StreamRedactor
from agents_app.core.watch import Watch
from agents_app.engine.exchanges import Exchange
from agents_app.engine.hooks import StopRun, StreamPhase
from agents_app.engine.llm import RetryNotice, Usage
from agents_app.engine.taint import Source, Taint
from agents_app.models import (
    AuditInterface,
    ConversationEntry,
    DoubleTexting,
    EntryKind,
    Run,
    RunEvent,
    Step,
    ToolCall,
    ToolCallStatus,
)
from agents_app.orchestration.children import tree_usage
from agents_app.runs.journal import WorkspaceJournal
from agents_app.runs.lease import Lease
from agents_app.runs.recipes import recipe_for
from agents_app.worker.commits import Heard, PendingWrites, Turn, committing, read_control_flags
from tools_app.registry import ToolResult, ToolSpec
from tools_app.sandbox import WORKSPACE

TOKEN_FLUSH_CHARS = 64
TOKEN_FLUSH_SECONDS = 0.1
# While the model streams, the run's row is read at most this often (for a cancel).
POLL_SECONDS = 0.25


@dataclass(frozen=True)
class ToolCallHandle:
    """What after_tool_call needs from before_tool_call, so it writes without reading."""

    call_id: int
    started: float
    tool: str
    arguments_sha256: str


class DatabaseHooks:
    """EngineHooks backed by the run's rows: every call and its outcome is committed."""

    def __init__(
        self,
        run: Run,
        lease: Lease,
        step: Step | None = None,
        *,
        specs: dict[str, ToolSpec] | None = None,
        workspace: Path | None = None,
        pending: PendingWrites | None = None,
        watch: Watch | None = None,
        turn: Turn | None = None,
        journal: WorkspaceJournal | None = None,
    ):
        # The worker's run, kept up to date by every commit through `commit` (its executor
        # shares the object, the pending writes, the watch and the turn).
        self.run = run
        self.pending = pending if pending is not None else PendingWrites()
        self.turn = turn if turn is not None else Turn(self.pending)
        self.watch = watch if watch is not None else Watch(run.pk)
        self.run_id = run.pk
        self.owner_id = run.owner_id
        self.conversation_id = run.conversation_id
        self.root_id = run.root_id
        # The steered messages this attempt delivered (a new attempt delivers them again).
        self._delivered: set[int] = set()
        self.lease = lease
        self.step = step
        self.specs = specs or {}
        self.workspace = workspace
        # The run's workspace journal, which the worker keeps between calls (runs.journal).
        self.journal = journal
        # Time parked on a person or the kill switch does not count against the deadline.
        self.limit_seconds = run.task.max_seconds or settings.AGENT_RUN_TIMEOUT
        self.deadline = (run.started_at or timezone.now()) + timedelta(
            seconds=self.limit_seconds + run.parked_seconds
        )
        # A contract agent's Stop lets the model's answer in flight finish (seed 002): while
        # it streams only the lease and the deadline are watched; the stop is seen after.
        self.finish_in_flight = recipe_for(run.kind).finish_in_flight
        self._stop_now = False
        # tool_call_id -> how the call was let through (auto | rule | yolo | person).
        self.let_through: dict[int, str] = {}
        self._buffer: list[str] = []
        self._buffered = 0
        # The tokens of one stream (one context) pass through one redactor, which holds back
        # an end that could be the start of a secret until the next piece (core.secrecy).
        self._redactor: StreamRedactor | None = None
        self._token_context: dict[str, Any] = {}
        self._let_through_next = ""
        # When tokens were last flushed, and the run last looked at while the model streams.
        self._last_flush = self._last_poll = time.monotonic()
        # phase -> the reasoning streamed in it, kept for the rows (the planner's and the
        # verifier's answers carry none of it).
        self._reasoning: dict[str, list[str]] = {}

    def commit(self, *, usage: bool = True, fenced: bool = False) -> Any:
        """A commit of this worker, holding its turn: what is pending first, then the
        caller's changes."""
        return committing(
            self.run, self.lease, self.pending, usage=usage, fenced=fenced, turn=self.turn
        )

    def checkpoint(self) -> None:
        self.flush_tokens(ended=False)
        if self.lease.lost.is_set():
            raise StopRun(ErrorCode.LEASE_LOST)
        # A step beside others stops before its next call once their tokens passed the budget.
        self.within_token_budget()
        if timezone.now() >= self.deadline:
            raise StopRun(ErrorCode.EXECUTION_TIMEOUT, f"the run exceeded {self.limit_seconds:g} s")
        if self.cancel_requested():
            raise StopRun(ErrorCode.CANCELLED)

    def cancel_requested(self) -> bool:
        """The run's flag as of its last read, read again only when its counter moved."""
        if self.watch.run_moved():
            read_control_flags(self.run)
        return self.run.cancel_requested

    def poll(self) -> None:
        now = time.monotonic()
        if now - self._last_poll >= POLL_SECONDS:
            self._last_poll = now
            if self.finish_in_flight and not self.stop_now():
                if self.lease.lost.is_set():
                    raise StopRun(ErrorCode.LEASE_LOST)
                return
            self.checkpoint()

    def stop_now(self) -> bool:
        """Whether a person asked to cut the request in flight after all (a contract agent's
        Stop now: a cancel_requested event that says `now`). Read only when the run's flags
        moved, so a plain Stop costs no query per streamed piece."""
        if not self._stop_now and self.watch.run_moved():
            read_control_flags(self.run)
            self._stop_now = (
                self.run.cancel_requested
                and RunEvent.objects.filter(
                    run_id=self.run_id, type=EventType.CANCEL_REQUESTED, payload__now=True
                ).exists()
            )
        return self._stop_now

    def on_llm_usage(self, usage: Usage, model: str) -> None:
        self.flush_tokens()
        if self.lease.lost.is_set():
            raise StopRun(ErrorCode.LEASE_LOST)
        pending = self.pending
        pending.prompt_tokens += usage.prompt_tokens
        pending.completion_tokens += usage.completion_tokens
        call = LlmUsagePayload(
            model=model,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            step_index=self.step.index if self.step else None,
        )
        row = audit_event(
            action=LLM_CALL,
            interface=AuditInterface.WORKER,
            run_id=self.run_id,
            target=model,
            details=call,
        )
        pending.usage.append((call, row))
        self.within_token_budget()
        run = self.run
        if run.root_id is not None:
            # The tree's usage is read from the rows: this run's share goes in first.
            with self.commit():
                pass
            self.tree_within_budget(run.root_id, "tokens")

    def on_llm_exchange(self, exchange: Exchange) -> None:
        # Written with its usage by the step's next commit, which numbers it and redacts what
        # the model said, text from outside, like a tool's result (PendingWrites).
        step = self.step
        run = self.run
        self.pending.exchanges.append(
            Heard(
                exchange,
                step.pk if step is not None else None,
                step.retry_count if step is not None else run.attempt,
                exchange.connection_id or run.connection_id,
                time.time(),
            )
        )

    @property
    def lane(self) -> int | None:
        """The lane of this phase's model calls (engine.llm.Asked): its step's index, or None
        for the run's own calls (planning, verifying)."""
        return self.step.index if self.step is not None else None

    def within_token_budget(self) -> None:
        """The run's tokens, written and heard by any of its steps, within its budget. Raises
        DomainError BUDGET_EXCEEDED."""
        run = self.run
        with self.turn:
            used = run.total_tokens + self.turn.unwritten_tokens()
        if used > run.max_tokens:
            raise DomainError(
                ErrorCode.BUDGET_EXCEEDED,
                f"The run used {used} LLM tokens; its budget is {run.max_tokens}",
                {"budget": "tokens", "used": used, "limit": run.max_tokens},
            )

    def tree_within_budget(self, root_id: int, budget: str) -> None:
        """A child spends its tree's root's budget: the whole tree's tokens or tool calls may
        not pass the root's. Raises DomainError BUDGET_EXCEEDED."""
        used = tree_usage(root_id)[budget]
        root = Run.objects.only("max_tokens", "max_tool_calls").get(pk=root_id)
        limit = root.max_tokens if budget == "tokens" else root.max_tool_calls
        if used > limit or (budget == "tool_calls" and used >= limit):
            raise DomainError(
                ErrorCode.BUDGET_EXCEEDED,
                f"The team of run {root_id} used {used} {budget.replace('_', ' ')}; "
                f"its budget is {limit}",
                {"budget": budget, "used": used, "limit": limit, "tree": root_id},
            )

    def incoming(self, *, turn: int) -> list[tuple[Any, str]]:
        # A chat or contract run always has its conversation: no test reaches this return
        # (tests/dialect_guard.py asks every other line here).
        if not self.conversation_id:  # pragma: no cover
            return []
        with self.commit() as w:
            waiting = (
                ConversationEntry.objects.select_for_update()
                .filter(
                    Q(run__isnull=True) | Q(run_id=self.run_id),
                    conversation_id=self.conversation_id,
                    kind=EntryKind.USER,
                    mode=DoubleTexting.STEER,
                    seq__isnull=True,
                )
                .exclude(pk__in=self._delivered)
                .exclude(data__has_key="held")
                .order_by("id")
            )
            delivered = []
            for entry in waiting:
                if entry.data.get(REPLAY_TURN, turn) > turn:
                    continue  # a replay's: steered in at the turn its source took it
                entry.run_id, entry.delivered_at_turn = self.run_id, turn
                entry.save(update_fields=["run", "delivered_at_turn"])
                self._delivered.add(entry.pk)
                w.event(
                    EventType.MESSAGE_STEERED,
                    MessageSteeredPayload(entry_id=entry.pk, turn=turn, text=entry.text),
                )
                delivered.append((entry.pk, entry.text))
        return delivered

    def on_llm_retry(self, notice: RetryNotice) -> None:
        self.flush_tokens()
        with self.commit() as w:
            w.event(
                EventType.LLM_RETRY,
                LlmRetryPayload(
                    code=notice.code,
                    reason=notice.reason,
                    delay=round(notice.delay, 2),
                    attempt=notice.attempt,
                    attempts=notice.attempts,
                    step_index=self.step.index if self.step else None,
                ),
            )

    def on_token(
        self, text: str, *, phase: StreamPhase, step_index: int | None, reasoning: bool = False
    ) -> None:
        if reasoning:
            self._reasoning.setdefault(phase, []).append(text)
        context = {"phase": phase, "step_index": step_index, "reasoning": reasoning}
        if context != self._token_context:
            self.flush_tokens()
            self._token_context = context
        self._buffer.append(text)
        self._buffered += len(text)
        if (
            self._buffered >= TOKEN_FLUSH_CHARS
            or time.monotonic() - self._last_flush >= TOKEN_FLUSH_SECONDS
        ):
            self.flush_tokens(ended=False)

    def streamed_reasoning(self, *phases: StreamPhase) -> str:
        """The reasoning streamed in `phases` so far, one paragraph per phase."""
        parts = ("".join(self._reasoning.get(phase, [])).strip() for phase in phases)
        return "\n\n".join(part for part in parts if part)

    def flush_tokens(self, *, ended: bool = True) -> None:
        """Tokens are not RunEvents: coalesced pieces go to the channel layer only, redacted.
        `ended`: the stream is over (its answer came, or failed, or the context changes), so
        the end held back for the redaction goes too; mid-stream it waits for what follows."""
        self._last_flush = time.monotonic()
        if not self._buffer and (self._redactor is None or not ended):
            return
        if self._redactor is None:
            self._redactor = StreamRedactor()
        token = self._redactor.feed("".join(self._buffer))
        if ended:
            token += self._redactor.finish()
            self._redactor = None
        self._buffer.clear()
        self._buffered = 0
        if not token:
            return
        publish(
            run_group(self.run_id),
            [{"type": "run.token", "run_id": self.run_id, "token": token, **self._token_context}],
        )

    def before_tool_call(self, tool: str, arguments: dict[str, Any]) -> ToolCallHandle:
        assert self.step is not None
        # A refused call is recorded too, whatever the model sent: as text a row can hold
        # (its refusal says what was wrong; the registry refuses such arguments).
        tool, arguments = storable_text(tool), storable(arguments)
        if self.journal is not None and self.workspace is not None:
            self.journal.before_call(
                workspace=self.workspace,
                step_id=self.step.pk,
                pending=self.pending.workspace_changes,
            )
        if self.root_id is not None:
            self.tree_within_budget(self.root_id, "tool_calls")
        with self.commit(usage=False, fenced=True) as w:
            run = w.run
            if run.tool_calls_made >= run.max_tool_calls:
                raise DomainError(
                    ErrorCode.BUDGET_EXCEEDED,
                    f"The run reached its budget of {run.max_tool_calls} tool calls",
                    {
                        "budget": "tool_calls",
                        "used": run.tool_calls_made,
                        "limit": run.max_tool_calls,
                    },
                )
            w.set(tool_calls_made=run.tool_calls_made + 1)
            call = rows.new(
                ToolCall,
                run_id=self.run_id,
                step=self.step,
                attempt=self.step.retry_count,
                tool=tool,
                arguments=arguments,
            )
            rows.insert([call], ids=True)
            w.event(
                EventType.TOOL_CALL,
                ToolCallPayload(
                    tool_call_id=call.pk,
                    step_index=self.step.index,
                    tool=tool,
                    arguments=arguments,
                ),
            )
        if self._let_through_next:
            self.let_through[call.pk] = self._let_through_next
            self._let_through_next = ""
        return ToolCallHandle(call.pk, time.monotonic(), tool, arguments_sha256(arguments))

    def approval_needed(self, tool: str, arguments: dict[str, Any]) -> Ask | None:
        spec = self.specs.get(tool)
        if spec is None:
            return None  # not offered by configuration (e.g. a test registry): nothing to ask
        ask, how = approval_policy(
            self.owner_id,
            spec,
            arguments,
            self.workspace or Path("/"),
            taints=lambda: self.taints(arguments),
        )
        self._let_through_next = how  # the next before_tool_call is this call
        return ask

    def taints(self, arguments: dict[str, Any]) -> list[Taint]:
        """The arguments that carry untrusted text the run has seen: results committed or
        still pending, and the MCP tools' descriptions it was offered (approvals.provenance)."""
        pending = [(call_id, fields["result"]) for call_id, fields, *_ in self.pending.results]
        described = [
            Source(spec.description, f"the description of tool {name}")
            for name, spec in self.specs.items()
            if spec.source == "mcp" and spec.description
        ]
        own = (str(self.workspace), WORKSPACE) if self.workspace else (WORKSPACE,)
        return call_taints(self.run, arguments, pending=pending, extra=described, own_paths=own)

    def after_tool_call(
        self,
        handle: ToolCallHandle,
        *,
        result: ToolResult | None,
        error_code: str = "",
        error: str = "",
    ) -> None:
        call_id = handle.call_id
        duration_ms = int((time.monotonic() - handle.started) * 1000)
        ok = result is not None and result.ok and not error_code
        status = ToolCallStatus.SUCCEEDED if ok else ToolCallStatus.FAILED
        step_index = self.step.index if self.step else None
        if self.journal is not None and self.workspace is not None:
            self.journal.after_call(
                workspace=self.workspace,
                step_id=self.step.pk if self.step else None,
                call_id=call_id,
                pending=self.pending.workspace_changes,
            )
        # Written with the step's next commit (its end, or the next call's row).
        self.pending.results.append(
            (
                call_id,
                {
                    "status": status,
                    "result": result.content if result is not None else None,
                    "error": storable_text(error) if error_code else "",
                    "duration_ms": duration_ms,
                },
                ToolResultPayload(
                    tool_call_id=call_id,
                    step_index=step_index,
                    status=status,
                    result=result.content if ok else None,
                    error_code=error_code,
                    error=storable_text(error),
                    duration_ms=duration_ms,
                ),
                audit_event(
                    action=TOOL_CALL,
                    interface=AuditInterface.WORKER,
                    run_id=self.run_id,
                    target=handle.tool,
                    details={
                        "tool_call_id": call_id,
                        "step_index": step_index,
                        "arguments_sha256": handle.arguments_sha256,
                        "outcome": status,
                        "approval": self.let_through.get(call_id, ""),
                        "error_code": error_code,
                        "duration_ms": duration_ms,
                    },
                ),
            )
        )
