"""Two runs compared (issue 36, item 5): their current plans aligned step by step (by index),
each step's tool calls in order, the files each left, tokens, time and outcome, and the first
point where they part.

Plain Python over plain records (`RunRecord`); `agents_app.runs.diff` reads the rows into them.
Steps and calls are numbered from 1, as the run page numbers them. Tokens and time are
measurements, not behaviour: they are reported side by side but never make a divergence. A
divergence is looked for in the order a run happens: each step (its objective, then its calls
one by one: tool, arguments, status, result; then its status, output and error), then the
files, then the outcome."""

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# How much of a long value (arguments, a result, an output) a diff shows; the whole is compared.
SHOWN_CHARS = 500
OUTPUT_SHOWN_CHARS = 2000


@dataclass(frozen=True)
class CallRecord:
    tool: str
    arguments: Any
    status: str
    result: Any
    error: str = ""


@dataclass(frozen=True)
class StepRecord:
    index: int
    objective: str
    status: str
    output: str = ""
    error: str = ""
    calls: tuple[CallRecord, ...] = ()
    started_at: datetime | None = None
    finished_at: datetime | None = None


@dataclass(frozen=True)
class FileRecord:
    """A path as the run left it: its content's hash and size ("" and 0 for a link or other)."""

    path: str
    sha256: str
    size: int
    kind: str = "file"


@dataclass(frozen=True)
class RunRecord:
    status: str
    final_response: str = ""
    error_code: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    started_at: datetime | None = None
    finished_at: datetime | None = None
    steps: tuple[StepRecord, ...] = ()
    files: tuple[FileRecord, ...] = ()


@dataclass(frozen=True)
class Divergence:
    """Where two runs first part. `step` and `call` are numbers from 1 (None: not within a step
    or a call); `field` names what differs; `anchor` is the page's and the rows' name for it."""

    field: str
    reason: str
    anchor: str
    step: int | None = None
    call: int | None = None


@dataclass
class RunDiff:
    steps: list[dict[str, Any]]
    files: list[dict[str, Any]]
    tokens: dict[str, Any]
    time: dict[str, Any]
    outcome: dict[str, Any]
    first_divergence: Divergence | None = None
    # Every divergence, in the order they are looked for (the first is `first_divergence`).
    divergences: list[Divergence] = field(default_factory=list)


def canonical_json(value: Any) -> str:
    """`value` as normalised JSON: keys sorted, no spaces; what two values are compared by."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def value_sha256(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8", "surrogatepass")).hexdigest()


def shown(text: str, limit: int = SHOWN_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _seconds(started: datetime | None, finished: datetime | None) -> float | None:
    if started is None or finished is None:
        return None
    return (finished - started).total_seconds()


def _call_side(call: CallRecord | None) -> dict[str, Any] | None:
    if call is None:
        return None
    result_text = "" if call.result is None else canonical_json(call.result)
    return {
        "tool": call.tool,
        "arguments": shown(canonical_json(call.arguments)),
        "status": call.status,
        "result": shown(result_text),
        "result_sha256": value_sha256(call.result) if call.result is not None else "",
        "error": shown(call.error),
    }


def _call_differs(a: CallRecord, b: CallRecord) -> list[str]:
    """What differs between two calls at one place, in the order a reason names them."""
    fields = []
    if a.tool != b.tool:
        fields.append("tool")
    if canonical_json(a.arguments) != canonical_json(b.arguments):
        fields.append("arguments")
    if a.status != b.status:
        fields.append("status")
    if canonical_json(a.result) != canonical_json(b.result) or a.error != b.error:
        fields.append("result")
    return fields


def _step_side(step: StepRecord | None) -> dict[str, Any] | None:
    if step is None:
        return None
    return {
        "objective": step.objective,
        "status": step.status,
        "output": shown(step.output, OUTPUT_SHOWN_CHARS),
        "error": shown(step.error),
        "calls": len(step.calls),
        "started_at": step.started_at,
        "finished_at": step.finished_at,
        "seconds": _seconds(step.started_at, step.finished_at),
    }


def _at(items: tuple, position: int) -> Any:
    return items[position] if position < len(items) else None


def _call_reason(number: int, call: int, a: CallRecord, b: CallRecord, what: str) -> str:
    if what == "tool":
        return f"step {number}: call {call} tool differs ({a.tool} vs {b.tool})"
    if what == "status":
        return f"step {number}: call {call} {a.tool} status differs ({a.status} vs {b.status})"
    verb = "differ" if what == "arguments" else "differs"
    return f"step {number}: call {call} {a.tool} {what} {verb}"


def _compare_step(
    a: StepRecord | None, b: StepRecord | None, number: int, found: list[Divergence]
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "step": number,
        "anchor": f"step-{number}",
        "a": _step_side(a),
        "b": _step_side(b),
        "differs": [],
        "calls": [],
    }
    if a is None or b is None:
        side = "a" if b is None else "b"
        row["differs"] = ["presence"]
        found.append(Divergence("presence", f"step {number} only in {side}", row["anchor"], number))
        longer = a or b
        row["calls"] = [
            {
                "call": position + 1,
                "anchor": f"step-{number}-call-{position + 1}",
                "a": _call_side(call if a else None),
                "b": _call_side(call if b else None),
                "differs": ["presence"],
            }
            for position, call in enumerate(longer.calls)
        ]
        row["same"] = False
        return row
    if a.objective != b.objective:
        row["differs"].append("objective")
        found.append(
            Divergence("objective", f"step {number} objective differs", row["anchor"], number)
        )
    for position in range(max(len(a.calls), len(b.calls))):
        call_a, call_b = _at(a.calls, position), _at(b.calls, position)
        call = position + 1
        anchor = f"step-{number}-call-{call}"
        if call_a is None or call_b is None:
            differs = ["presence"]
            present = call_a or call_b
            side = "a" if call_b is None else "b"
            found.append(
                Divergence(
                    "presence",
                    f"step {number}: call {call} {present.tool} only in {side}",
                    anchor,
                    number,
                    call,
                )
            )
        else:
            differs = _call_differs(call_a, call_b)
            if differs:
                reason = _call_reason(number, call, call_a, call_b, differs[0])
                found.append(Divergence(differs[0], reason, anchor, number, call))
        row["calls"].append(
            {
                "call": call,
                "anchor": anchor,
                "a": _call_side(call_a),
                "b": _call_side(call_b),
                "differs": differs,
            }
        )
    for name in ("status", "output", "error"):
        left, right = getattr(a, name), getattr(b, name)
        if left != right:
            row["differs"].append(name)
            detail = f" ({left} vs {right})" if name == "status" else ""
            reason = f"step {number} {name} differs{detail}"
            found.append(Divergence(name, reason, row["anchor"], number))
    row["same"] = not row["differs"] and not any(c["differs"] for c in row["calls"])
    return row


def _compare_files(
    a: tuple[FileRecord, ...], b: tuple[FileRecord, ...], found: list[Divergence]
) -> list[dict[str, Any]]:
    left = {f.path: f for f in a}
    right = {f.path: f for f in b}
    rows = []
    for path in sorted(left.keys() | right.keys()):
        file_a, file_b = left.get(path), right.get(path)
        if file_a is None or file_b is None:
            same = False
            reason = f"files: {path} only in {'a' if file_b is None else 'b'}"
        else:
            same = (file_a.sha256, file_a.size, file_a.kind) == (
                file_b.sha256,
                file_b.size,
                file_b.kind,
            )
            reason = f"files: {path} differs"
        if not same:
            found.append(Divergence("files", reason, "files"))
        rows.append(
            {
                "path": path,
                "a": _file_side(file_a),
                "b": _file_side(file_b),
                "same": same,
            }
        )
    return rows


def _file_side(file: FileRecord | None) -> dict[str, Any] | None:
    if file is None:
        return None
    return {"sha256": file.sha256, "size": file.size, "kind": file.kind}


def _outcome(a: RunRecord, b: RunRecord, found: list[Divergence]) -> dict[str, Any]:
    differs = [
        name
        for name in ("status", "error_code", "final_response")
        if getattr(a, name) != getattr(b, name)
    ]
    if "status" in differs:
        found.append(Divergence("status", f"outcome: {a.status} vs {b.status}", "outcome"))
    elif "error_code" in differs:
        reason = f"outcome: error {a.error_code or 'none'} vs {b.error_code or 'none'}"
        found.append(Divergence("error_code", reason, "outcome"))
    elif differs:
        found.append(Divergence("final_response", "outcome: final response differs", "outcome"))

    def side(run: RunRecord) -> dict[str, Any]:
        return {
            "status": run.status,
            "error_code": run.error_code,
            "final_response": shown(run.final_response, OUTPUT_SHOWN_CHARS),
        }

    return {"a": side(a), "b": side(b), "differs": differs, "same": not differs}


def _tokens(a: RunRecord, b: RunRecord) -> dict[str, Any]:
    def side(run: RunRecord) -> dict[str, int]:
        total = run.prompt_tokens + run.completion_tokens
        return {"prompt": run.prompt_tokens, "completion": run.completion_tokens, "total": total}

    left, right = side(a), side(b)
    return {"a": left, "b": right, "difference": {k: right[k] - left[k] for k in left}}


def _time(a: RunRecord, b: RunRecord) -> dict[str, Any]:
    def side(run: RunRecord) -> dict[str, Any]:
        return {
            "started_at": run.started_at,
            "finished_at": run.finished_at,
            "seconds": _seconds(run.started_at, run.finished_at),
        }

    left, right = side(a), side(b)
    both = left["seconds"] is not None and right["seconds"] is not None
    return {
        "a": left,
        "b": right,
        "difference_seconds": right["seconds"] - left["seconds"] if both else None,
    }


def runs_compare(a: RunRecord, b: RunRecord) -> RunDiff:
    """`a` and `b` side by side: one row a step (by index) with one row a call (in order), one
    row a file path, tokens, time and outcome, and where they first part (None: nowhere)."""
    found: list[Divergence] = []
    steps = [
        _compare_step(_at(a.steps, position), _at(b.steps, position), position + 1, found)
        for position in range(max(len(a.steps), len(b.steps)))
    ]
    files = _compare_files(a.files, b.files, found)
    outcome = _outcome(a, b, found)
    return RunDiff(
        steps=steps,
        files=files,
        tokens=_tokens(a, b),
        time=_time(a, b),
        outcome=outcome,
        first_divergence=found[0] if found else None,
        divergences=found,
    )
