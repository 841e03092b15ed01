"""What a run must show before it may succeed: its tool calls for the verifier, and the files
its task asked for in its workspace."""

import json
from pathlib import Path

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.engine.content import answer_problem, content_problem
from agents_app.engine.evidence import CallRecord, files_to_write
from agents_app.engine.plan_edits import EDITED, PlanEdit, edit_in
from agents_app.models import Plan, Run, Step, StepStatus, ToolCall, ToolCallStatus
from agents_app.runs.lifecycle import workspace_for

READ_LIMIT = 1_000_000


def call_records(run: Run, steps: list[Step]) -> list[CallRecord]:
    """The run's tool calls in the order they were made, numbered from 1; those of `steps`
    carry their step's index, an earlier plan's carry None."""
    index_of = {step.pk: step.index for step in steps}
    records = []
    for number, call in enumerate(ToolCall.objects.filter(run=run).order_by("id"), start=1):
        ok = call.status == ToolCallStatus.SUCCEEDED
        if ok:
            result = json.dumps(call.result, ensure_ascii=False, default=str)
        else:
            result = call.error or call.status
        records.append(
            CallRecord(
                number=number,
                step_index=index_of.get(call.step_id),
                tool=call.tool,
                arguments=call.arguments if isinstance(call.arguments, dict) else {},
                ok=ok,
                result=result,
            )
        )
    return records


def root_cause(steps: list[Step], calls: list[CallRecord]) -> str:
    """Why a run's work went wrong, in a person's words, or "": its first step that failed
    (numbered from 1, as the pages number them), else its last call that failed."""
    for step in steps:
        if step.status in (StepStatus.FAILED, StepStatus.TIMEOUT) and step.error:
            return f"Step {step.index + 1} failed: {step.error}"
    for call in reversed(calls):
        if not call.ok:
            where = f" (step {call.step_index + 1})" if call.step_index is not None else ""
            return f"The call of {call.tool}{where} failed: {call.result}"
    return ""


def plan_edit(run: Run) -> PlanEdit | None:
    """The latest plan of `run` a person edited at its approval, or None: from then on the task
    is as they reshaped it (a later plan made by the planner does not undo their edit)."""
    for plan in Plan.objects.filter(run=run, raw__has_key=EDITED).order_by("-version")[:1]:
        return edit_in(plan.version, plan.raw)
    return None


# The checks a run judged complete must pass, in this order; a failure names its check.
FILES_CHECK, CONTENT_CHECK, ANSWER_CHECK = "files", "content", "answer"


def evidence_problem(
    run: Run,
    *,
    answer: str = "",
    calls: list[CallRecord] = (),
    verifier: str = "",
    edit: PlanEdit | None = None,
) -> DomainError | None:
    """Why a run judged complete may not succeed, or None: the files check (every file its
    task asks to write is in its workspace), the content check (they hold what the task names
    for them: engine.content) and the answer check (`answer` is no error message nor tool call
    written out). The message ends naming the check that failed; the details say it as `check`,
    with `verifier` (the model's reasoning). `edit`: the plan a person edited, whose steps and
    note are then the task the files are asked by."""
    workspace = workspace_for(run)
    task = edit.asks if edit is not None else run.task.text
    missing = [name for name in files_to_write(task) if not (workspace / name).is_file()]
    if missing:
        names = ", ".join(missing)
        who = f"The task as {edit.by} reshaped it" if edit is not None else "The task"
        return _failed(
            FILES_CHECK,
            f"{who} asks for {names}, but the workspace has no such file",
            {"missing": missing, "verifier": verifier},
        )
    wrong = content_problem(task, lambda name: _read(workspace / name))
    if wrong:
        return _failed(CONTENT_CHECK, wrong, {"verifier": verifier})
    no_answer = answer_problem(answer, list(calls))
    if no_answer:
        return _failed(ANSWER_CHECK, no_answer, {"answer": answer, "verifier": verifier})
    return None


def _failed(check: str, reason: str, details: dict) -> DomainError:
    return DomainError(
        ErrorCode.EVIDENCE_MISSING,
        f"{reason[:1].upper()}{reason[1:]} — the {check} check failed",
        {"check": check, **details},
    )


def _read(path: Path) -> str | None:
    """A file's text as the content check reads it (its first megabyte), None if absent."""
    try:
        with path.open("rb") as handle:
            return handle.read(READ_LIMIT).decode("utf-8", errors="replace")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
