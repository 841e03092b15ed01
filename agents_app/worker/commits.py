"""A worker's commits: what its hooks heard since the last one (PendingWrites), written first
by the next (`committing`), and the turn the commits of one run's parallel steps take (Turn).

What the engine reports is written at the step's next commit, not each on its own: a model
call's tokens, a tool call's result, their events and audit rows wait in `PendingWrites` until
the next commit of this worker (before the next tool call, or the step's end, or whatever the
executor commits next), which writes them first, in the order they were heard. A worker that
dies in between loses what it heard since its last commit, as it loses the action in flight:
the step is run again.
"""

import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from django.utils import timezone

from agents_app.core import rows
from agents_app.core.event_payloads import LlmUsagePayload, ToolResultPayload
from agents_app.core.events import EventType
from agents_app.core.secrecy import REDACTED, redact_all, redact_with, redaction
from agents_app.engine.exchanges import Exchange, framed, pack_calls
from agents_app.models import AuditEvent, ModelExchange, Run, ToolCall, WorkspaceChange
from agents_app.runs.journal import changes_write
from agents_app.runs.lease import Lease
from agents_app.runs.writer import RunWriter, fenced_run, locked_run
from agents_app.worker.connections import give_back
from agents_app.worker.steps import append_step_calls


def read_control_flags(run: Run) -> None:
    """Bring `run`'s cancel_requested and pause_requested up to date from its row (a person's
    flags: core.watch says when they may have moved)."""
    flags = Run.objects.filter(pk=run.pk).values("cancel_requested", "pause_requested").first()
    for name, value in (flags or {}).items():
        setattr(run, name, value)


@dataclass
class PendingWrites:
    """What a worker heard since its last commit and writes with its next one: model calls'
    usage (tokens, `llm_usage` events, audit rows, their exchanges) and tool calls' results
    (the call's row, `tool_result` events, audit rows)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage: list[tuple[LlmUsagePayload, AuditEvent]] = field(default_factory=list)
    # The model calls heard, with their usage: written by write_exchanges.
    exchanges: list["Heard"] = field(default_factory=list)
    # (tool call id, the row's fields, the event's payload, the audit row)
    results: list[tuple[int, dict[str, Any], ToolResultPayload, AuditEvent]] = field(
        default_factory=list
    )
    # What the calls changed in the workspace (runs.journal), numbered when written.
    workspace_changes: list[WorkspaceChange] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __bool__(self) -> bool:
        return bool(
            self.tokens or self.usage or self.results or self.exchanges or self.workspace_changes
        )

    def apply(self, w: RunWriter, *, usage: bool) -> None:
        """Write it in `w`'s transaction: the results, and the usage too unless `usage` is
        False (a tool call's row is committed before the call with the results heard so far;
        the usage waits for the step's end, tokens, events and audit rows together, so the
        accounting stays whole whatever becomes of the worker). `clear` once it committed."""
        audit = []
        for call_id, fields, payload, row in self.results:
            # A tool's result and error are text from outside (core.secrecy); the event's
            # payload is redacted by the writer.
            rows.update(ToolCall, call_id, **redact_all(fields))
            w.event(EventType.TOOL_RESULT, payload)
            audit.append(row)
        changes_write(self.workspace_changes, w)
        if usage:
            if self.prompt_tokens or self.completion_tokens:
                w.set(
                    prompt_tokens=w.run.prompt_tokens + self.prompt_tokens,
                    completion_tokens=w.run.completion_tokens + self.completion_tokens,
                )
            for payload, row in self.usage:
                w.event(EventType.LLM_USAGE, payload)
                audit.append(row)
            if self.exchanges:
                write_exchanges(self.exchanges, w)
        rows.insert(audit)

    def clear(self, *, usage: bool) -> None:
        self.results.clear()
        self.workspace_changes.clear()
        if usage:
            self.prompt_tokens = self.completion_tokens = 0
            self.usage.clear()
            self.exchanges.clear()


class Heard(NamedTuple):
    """A model call heard since the last commit (hooks.on_llm_exchange), and where it belongs."""

    exchange: Exchange
    step_id: int | None
    attempt: int  # the step's retry_count, or the run's attempt for a call of no step
    connection_id: int | None
    at: float  # time.time() when it answered


def write_exchanges(heard: list[Heard], w: RunWriter) -> None:
    """The calls `heard` written in `w`'s commit, one frame a lane (engine.exchanges.pack_calls):
    a step's attempt, appended to the step's row (`w.step_calls`: the commit's UPDATE of the
    step writes it, worker.steps.write_steps, or else one of its own, append_step_calls), or a
    phase of no step, a ModelExchange row. Its calls numbered in the run's turn (only the
    lease holder writes them, so the run's count is the rows'), what the model said and what
    it was asked redacted (core.secrecy), the secrets' pattern looked up once a commit."""
    lanes: dict[tuple[int | None, str, int], list[Heard]] = {}
    for call in heard:
        lanes.setdefault((call.step_id, call.exchange.phase, call.attempt), []).append(call)
    pattern = redaction()
    hide = pattern.sub
    seq, made = w.run.exchange_seq, []
    for (step_id, phase, attempt), calls in lanes.items():
        kept, requests = [], []
        for call in calls:
            e = call.exchange
            kept.append(
                [
                    e.request_sha256,
                    hide(REDACTED, e.content) if e.content else "",
                    redact_with(pattern, e.tool_calls) if e.tool_calls else [],
                    hide(REDACTED, e.reasoning) if e.reasoning else "",
                    e.finish_reason,
                    e.error_code,
                    hide(REDACTED, e.error) if e.error else "",
                    e.usage.prompt_tokens,
                    e.usage.completion_tokens,
                    e.model,
                    call.connection_id,
                    call.at,
                ]
            )
            requests.append(hide(REDACTED, e.request) if e.request else "")
        frame = pack_calls(kept, requests, seq=seq + 1, phase=phase, attempt=attempt)
        if step_id is not None:
            w.step_calls[step_id] = w.step_calls.get(step_id, b"") + framed(frame)
        else:
            made.append(
                rows.new(
                    ModelExchange,
                    run_id=w.run.pk,
                    seq=seq + 1,
                    phase=phase,
                    attempt=attempt,
                    calls=frame,
                    created_at=timezone.now(),
                )
            )
        seq += len(calls)
    w.set(exchange_seq=seq)
    rows.insert(made)


class Turn:
    """The turn the commits of one worker's run take, and what its branches heard and have
    not written yet. A run executed step after step has one branch, its worker's; a parallel
    plan's steps (worker.parallel) one each, in threads that share the run's row in memory:
    each commit, whoever makes it (the executor or a step's hooks), holds the turn from the
    row's read to its pending writes cleared, so the row is written by one commit at a time
    and a count on it (tool calls made) loses no increment. The budgets are checked holding
    it too, against the row and every branch's unwritten tokens: they hold for the run, not
    for each step. Reentrant: a commit inside a commit of the same thread joins it."""

    def __init__(self, *pending: PendingWrites) -> None:
        self._lock = threading.RLock()
        self.branches: list[PendingWrites] = list(pending)

    def __enter__(self) -> "Turn":
        self._lock.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    def join(self, pending: PendingWrites) -> None:
        with self:
            self.branches.append(pending)

    def leave(self, pending: PendingWrites) -> None:
        with self:
            self.branches.remove(pending)

    def unwritten_tokens(self) -> int:
        """The tokens the branches heard and did not write yet (ask holding the turn)."""
        return sum(p.tokens for p in self.branches)


@contextmanager
def committing(
    run: Run,
    lease: Lease,
    pending: PendingWrites,
    *,
    usage: bool = True,
    fenced: bool,
    turn: Turn | None = None,
) -> Iterator[RunWriter]:
    """One commit of the worker holding `run`: the row read again under its lock (the lease
    checked, `run` brought up to date), what is pending written first (its usage only with
    `usage`), then the caller's changes; holding `turn`, when the run's steps run side by
    side. `fenced` (a tool call's row, a step's end): the row is not read first; the commit
    ends with the fenced UPDATE (runs.writer.FencedWriter), which changes no status. The flags
    read with the row leave the control counters' baseline as it is: a counter that moved
    since the last look then costs one more read, never a miss."""
    with turn if turn is not None else nullcontext():
        lock = fenced_run(run, lease.token) if fenced else locked_run(run.pk, lease.token, run=run)
        with lock as w:
            pending.apply(w, usage=usage)
            yield w
            append_step_calls(w.step_calls)
        pending.clear(usage=usage)
    give_back()  # what follows a commit is a wait: a tool, the model, the next delivery
