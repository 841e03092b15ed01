"""What a run must show before it may succeed: its tool calls for the verifier, and the files
its task asked for in its workspace."""

import json

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.engine.evidence import CallRecord, files_to_write
from agents_app.engine.plan_edits import EDITED, PlanEdit
from agents_app.models import Plan, Run, Step, StepStatus, ToolCall, ToolCallStatus
from agents_app.runs.lifecycle import workspace_for


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
    for plan in Plan.objects.filter(run=run).order_by("-version"):
        edited = plan.raw.get(EDITED) if isinstance(plan.raw, dict) else None
        if isinstance(edited, dict):
            return PlanEdit(
                version=plan.version,
                by=str(edited.get("by", "")),
                note=str(edited.get("note", "")),
                steps=tuple(
                    (str(step.get("objective", "")), tuple(step.get("tool_names") or ()))
                    for step in plan.raw.get("steps", [])
                ),
            )
    return None


def evidence_problem(
    run: Run, *, verifier: str = "", edit: PlanEdit | None = None
) -> DomainError | None:
    """Why a run judged complete may not succeed, or None: every file its task asks to write
    (as `edit`, a person's edit of its plan, reshaped it) must be in its workspace. `verifier`
    (the model's reasoning) goes into the details."""
    workspace = workspace_for(run)
    asks = edit.asks if edit else run.task.text
    missing = [name for name in files_to_write(asks) if not (workspace / name).is_file()]
    if not missing:
        return None
    names = ", ".join(missing)
    task = f"The task as {edit.by} reshaped it" if edit else "The task"
    return DomainError(
        ErrorCode.EVIDENCE_MISSING,
        f"{task} asks for {names}, but the workspace has no such file",
        {"missing": missing, "verifier": verifier},
    )
