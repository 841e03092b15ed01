"""A replay's worker side (issue 36, item 4): its source's recorded answers and tool results
read from the rows, the provider that answers from them (engine.replay.ReplayProvider), the
registry that runs its tools again and compares what they return (ReplayRegistry), and its
divergences written as they are found.

A replay runs on the one engine like any run of its kind: only what answers its model calls
and where its tools' results come from differ."""

import json
import threading
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any

from agents_app.approvals.decisions import approval_decide
from agents_app.core.audit import arguments_sha256
from agents_app.core.errors import DomainError
from agents_app.core.events import EventType
from agents_app.core.secrecy import redact_all
from agents_app.engine.llm import Usage
from agents_app.engine.replay import (
    Divergence,
    DivergenceKind,
    RecordedAnswer,
    ReplayProvider,
    canonical_json,
)
from agents_app.models import (
    Approval,
    ApprovalKind,
    ApprovalStatus,
    AuditInterface,
    Decision,
    Run,
    RunStatus,
    Step,
    ToolCall,
    ToolCallStatus,
)
from agents_app.runs.exchanges import model_calls
from agents_app.runs.lease import Lease
from agents_app.runs.writer import locked_run
from tools_app.registry import ToolContext, ToolRegistry, ToolResult, ToolSpec

# A tool with one of these reaches outside the machine: a replay answers its calls from the
# recorded results unless it is asked to run them again (Run.origin_options["rerun"]).
NETWORK_CAPABILITIES = frozenset({"HTTP_GET", "WEB_FETCH"})


def answered_from_record(spec: ToolSpec) -> bool:
    """Whether a replay answers `spec`'s calls from the recorded results by default: an MCP
    server's tools and network tools, whose answers the replay cannot expect to be the same."""
    return spec.source == "mcp" or bool(spec.capabilities & NETWORK_CAPABILITIES)


@dataclass(frozen=True)
class RecordedCall:
    """One tool call of the source as the diff page numbers it (`step`, `call` from 1)."""

    step: int
    call: int
    ok: bool
    result: Any
    error: str


def _last_attempts(source: Run) -> dict[int, tuple[int, int]]:
    """step id -> (index, retry_count) of each of the source's steps."""
    return {
        pk: (index, retries)
        for pk, index, retries in Step.objects.filter(run=source).values_list(
            "pk", "index", "retry_count"
        )
    }


def recorded_answers(source: Run) -> list[RecordedAnswer]:
    """The source's model answers in the order they were asked; a step's only from its last
    attempt (an interrupted attempt's calls are not what the step did)."""
    steps = _last_attempts(source)
    answers = []
    for exchange in model_calls(source.pk):
        lane = None
        if exchange.step_id is not None:
            index, retries = steps.get(exchange.step_id, (None, None))
            if index is None or exchange.attempt != retries:
                continue
            lane = index
        answers.append(
            RecordedAnswer(
                phase=exchange.phase,
                lane=lane,
                request_sha256=exchange.request_sha256,
                request=exchange.request,
                content=exchange.content,
                tool_calls=exchange.tool_calls,
                reasoning=exchange.reasoning,
                finish_reason=exchange.finish_reason,
                usage=Usage(exchange.prompt_tokens, exchange.completion_tokens),
                model=exchange.llm_model,
                error_code=exchange.error_code,
                error=exchange.error,
            )
        )
    return answers


# The outcomes of a call the registry made (the others were denied, skipped, or are waiting).
MADE = frozenset({ToolCallStatus.SUCCEEDED, ToolCallStatus.FAILED})


def recorded_calls(source: Run) -> dict[tuple[str, str], deque[RecordedCall]]:
    """The source's tool calls that were made, by (tool, arguments' hash), each in the order
    it was made, numbered as the diff page numbers them (every call of its step's last
    attempt counts)."""
    steps = _last_attempts(source)
    calls: dict[tuple[str, str], deque[RecordedCall]] = {}
    numbered: dict[int, int] = {}
    for call in ToolCall.objects.filter(run=source).order_by("id"):
        index, retries = steps.get(call.step_id, (None, None))
        if index is None or call.attempt != retries:
            continue
        numbered[call.step_id] = numbered.get(call.step_id, 0) + 1
        if call.status not in MADE:
            continue  # denied, skipped, or never answered: no tool was called
        calls.setdefault((call.tool, arguments_sha256(call.arguments)), deque()).append(
            RecordedCall(
                step=index + 1,
                call=numbered[call.step_id],
                ok=call.status == ToolCallStatus.SUCCEEDED,
                result=call.result,
                error=call.error,
            )
        )
    return calls


def _same(a: Any, b: Any) -> bool:
    return canonical_json(a) == canonical_json(b)


def _results_shown(requests: Any) -> dict[str, Any]:
    """Each tool result the recorded requests showed the model (a tool message's JSON, keys
    in the order shown), by its canonical JSON."""
    shown: dict[str, Any] = {}
    for text in requests:
        try:
            messages = json.loads(text).get("messages", [])
        except (ValueError, AttributeError):
            continue
        for message in messages:
            if message.get("role") != "tool" or not isinstance(message.get("content"), str):
                continue
            try:
                value = json.loads(message["content"])
            except ValueError:
                continue  # cut short for the model, or not JSON
            shown.setdefault(canonical_json(value), value)
    return shown


class ReplayRegistry(ToolRegistry):
    """The run's tools, shared with `inner`, whose calls a replay makes again in its own fresh
    workspace and compares with its source's (a different outcome or result is a divergence
    at that call); MCP and network tools are answered from the recorded results, unless named
    in `rerun`."""

    def __init__(
        self,
        inner: ToolRegistry,
        calls: dict[tuple[str, str], deque[RecordedCall]],
        *,
        rerun: frozenset[str],
        note: Any,
        requests: list[str] = (),
    ) -> None:
        super().__init__()
        self._tools, self._lock = inner._tools, inner._lock
        self._inner = inner
        self._calls = calls
        self._taken = threading.Lock()
        self._rerun = rerun
        self._note = note
        self._shown: dict[str, Any] | None = None
        self._requests = requests

    def _as_shown(self, result: Any) -> Any:
        """`result` with its keys in the order the source's model was shown them: PostgreSQL's
        jsonb keeps a call's result with its keys reordered, and the engine writes a result
        for the model in its keys' order, so a result answered from the record would make the
        next request drift. The source's requests hold each result as it was shown."""
        if not isinstance(result, dict):
            return result
        if self._shown is None:
            self._shown = _results_shown(self._requests)
        return self._shown.get(canonical_json(result), result)

    def call(self, name: str, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        with self._taken:
            queue = self._calls.get((name, arguments_sha256(arguments)))
            recorded = queue.popleft() if queue else None
        live = name in self._rerun or not answered_from_record(self.get(name).spec)
        if recorded is None:
            self._note(
                Divergence(
                    DivergenceKind.CALL_NOT_RECORDED,
                    f"a {name} call the source did not make (these arguments, or once more)",
                )
            )
            if not live:
                return ToolResult(ok=False, error="This replay has no recorded result for it.")
            return self._inner.call(name, arguments, context)
        if not live:
            content = self._as_shown(recorded.result) if recorded.ok else recorded.result
            return ToolResult(ok=recorded.ok, content=content, error=recorded.error)
        result = self._inner.call(name, arguments, context)
        differs = (
            "outcome"
            if result.ok != recorded.ok
            else "result"
            if not _same(result.content if result.ok else result.error, _kept(recorded))
            else ""
        )
        if differs:
            self._note(
                Divergence(
                    DivergenceKind.RESULT_DIFFERS,
                    f"step {recorded.step}: call {recorded.call} {name} {differs} differs",
                    recorded.step,
                    recorded.call,
                )
            )
        return result


def _kept(recorded: RecordedCall) -> Any:
    return recorded.result if recorded.ok else recorded.error


class DivergenceLog:
    """Writes each divergence as it is found, in a commit of its own (the lease holder's):
    a `replay_diverged` event, and the run's replay_report (the count and the first); a
    child's is counted into its root's report too (record_divergence)."""

    def __init__(self, run_id: int, lease: Lease) -> None:
        self.run_id = run_id
        self.lease = lease

    def __call__(self, divergence: Divergence) -> None:
        record_divergence(self.run_id, divergence, self.lease.token)


def record_divergence(run_id: int, divergence: Divergence, token: str | None = None) -> None:
    """`divergence` of run `run_id` written: its event and its replay_report (as the lease
    holder `token`, if given); then, when the run is in a tree, counted into the root's
    replay_report in a commit of its own, so a replay's report is its whole tree's (a child's
    divergence is the head's too). The root's row is locked after the child's was let go:
    no two rows are held at once."""
    with locked_run(run_id, token) as w:
        shown = _count(w, divergence, "")
        w.event(EventType.REPLAY_DIVERGED, shown)
        root_id = w.run.root_id
    if root_id is not None and root_id != run_id:
        with locked_run(root_id) as w:
            _count(w, divergence, f"run {run_id}: ")


def _count(w: Any, divergence: Divergence, where: str) -> dict[str, Any]:
    """`divergence` counted in `w`'s run's replay_report; returns it as shown."""
    shown = divergence.as_dict()
    report = w.run.replay_report or {}
    first = report.get("first") or {**shown, "message": where + shown["message"]}
    # Its diff and message may hold what a model or a tool said: redacted, as its event is.
    w.set(replay_report=redact_all({"count": report.get("count", 0) + 1, "first": first}))
    return shown


def replay_engine(run: Run, lease: Lease, registry: ToolRegistry) -> tuple[Any, ToolRegistry]:
    """What answers a replay (`run`, origin replay): its provider and its registry."""
    source = run.origin_run  # None: deleted, or a child its source never started
    note = DivergenceLog(run.pk, lease)
    # A replay delivered again (after an approval, a pause) goes on after what it took.
    answered = Counter((answer.phase, answer.lane) for answer in recorded_answers(run))
    answers = recorded_answers(source) if source is not None else []
    provider = ReplayProvider(
        answers,
        note,
        stopped=source is not None and source.status == RunStatus.CANCELLED,
        answered=answered,
    )
    calls = recorded_calls(source) if source is not None else {}
    for key, made in recorded_calls(run).items():
        queue = calls.get(key, deque())
        for _ in range(min(len(made), len(queue))):
            queue.popleft()
    rerun = frozenset(run.origin_options.get("rerun") or ())
    return provider, ReplayRegistry(
        registry, calls, rerun=rerun, note=note, requests=[a.request for a in answers]
    )


# How a source's approval was decided -> the decision its replay takes.
RECORDED_DECISIONS = {
    ApprovalStatus.APPROVED: Decision.APPROVE,
    ApprovalStatus.MODIFIED: Decision.MODIFY,
    ApprovalStatus.SKIPPED: Decision.SKIP,
    ApprovalStatus.DENIED: Decision.DENY,
    ApprovalStatus.CANCELLED: Decision.CANCEL,
}


def _approval_key(approval: Approval) -> tuple[str, str, str]:
    return (approval.kind, approval.tool, arguments_sha256(approval.arguments))


def decide_as_recorded(run_id: int) -> bool:
    """A replay that parked on an approval: each of its pending approvals decided as its
    source's matching one was (the same kind, tool and arguments, the same how-many-th), as
    the person who decided it then, through the worker (`approval.decide` audited with the
    worker's interface), so nobody is waited for.
    An approval its source never asked for, or never decided, is a divergence, and waits for a
    person. True when one was decided (the run goes on: approval_decide queued it)."""
    run = Run.objects.filter(pk=run_id).only("origin_run_id", "lease_owner").first()
    if run is None or run.origin_run_id is None:
        return False
    mine = list(Approval.objects.filter(run_id=run_id).order_by("id"))
    theirs = list(Approval.objects.filter(run_id=run.origin_run_id).order_by("id"))
    decided = False
    for approval in (a for a in mine if a.status == ApprovalStatus.PENDING):
        key = _approval_key(approval)
        nth = sum(1 for a in mine if a.pk < approval.pk and _approval_key(a) == key)
        matching = [a for a in theirs if _approval_key(a) == key]
        recorded = matching[nth] if nth < len(matching) else None
        decision = RECORDED_DECISIONS.get(recorded.status) if recorded is not None else None
        if decision is None:
            divergence = Divergence(
                DivergenceKind.APPROVAL_NOT_RECORDED,
                f"an approval of {approval.tool or 'the plan'} its source never decided: "
                "it waits for a person",
            )
            record_divergence(run_id, divergence)
            continue
        extra = recorded.decision_arguments or {}
        arguments, note = None, extra.get("feedback", "")
        if decision == Decision.MODIFY:
            # Only a plan's edit carries the person's note among its decision's arguments; a
            # tool's modified arguments are the call's own (a `note` argument among them).
            plan = approval.kind == ApprovalKind.PLAN
            arguments = {k: v for k, v in extra.items() if k != "note"} if plan else extra
            note = extra.get("note", "") if plan else ""
        try:
            approval_decide(
                approval_id=approval.pk,
                decision=decision,
                # The person's decision, applied by the worker: a plan they edited says who
                # reshaped the task (its verifier is told), as it did in the source.
                actor=recorded.decided_by,
                interface=AuditInterface.WORKER,
                arguments=arguments,
                note=note,
            )
        except DomainError as exc:
            # A person decided it meanwhile (CONFLICT), or the recorded arguments no longer
            # fit the tool (INVALID_ARGUMENTS): said, and the approval is left as it is.
            record_divergence(
                run_id,
                Divergence(
                    DivergenceKind.APPROVAL_NOT_APPLIED,
                    f"the recorded decision ({decision}) on {approval.tool or 'the plan'} "
                    f"could not be applied: {exc.code}: {exc.message}",
                ),
            )
            continue
        decided = True
    return decided
