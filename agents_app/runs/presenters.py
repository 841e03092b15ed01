"""Every JSON shape of a run, built once: the summary lists show, a plan with its steps,
seed 000's AgentResult, the links, and the `run.finished` webhook payload."""

from typing import Any, Literal

from agents_app.core.event_payloads import ResultPayload
from agents_app.engine.plan_edits import EDITED
from agents_app.models import (
    Origin,
    Plan,
    Run,
    RunStatus,
    Step,
    ToolCall,
)
from agents_app.runs.selectors import current_plan, plan_replacements


def agent_result(
    run: Run, plan: Plan | None | Literal[False] = False, steps: list[Step] | None = None
) -> ResultPayload:
    """Seed 000's AgentResult for a run, from the steps of its latest plan (`plan`, when the
    caller just read it; `steps`, its steps in index order, when the caller holds them)."""
    if plan is False:
        plan = current_plan(run)
    if steps is None:
        steps = list(plan.steps.order_by("index")) if plan else []
    # Each step's calls of its last attempt, in the order made (a tool called twice: the last).
    outputs: dict[tuple[int, int], dict[str, Any]] = {}
    calls: Any = ()
    if run.tool_calls_made:  # counted in the commit that writes each call's row
        calls = (
            ToolCall.objects.filter(step__in=[step.pk for step in steps])
            .order_by("id")
            .values_list("step_id", "attempt", "tool", "result", "error")
        )
    for step_id, attempt, tool, result, error in calls:
        outputs.setdefault((step_id, attempt), {})[tool] = (
            result if error == "" else {"error": error}
        )
    executed = []
    for step in steps:
        executed.append(
            {
                "step_index": step.index,
                "objective": step.objective,
                "status": step.status,
                "tool_outputs": outputs.get((step.pk, step.retry_count), {}),
                "output": step.output,
                "error_message": step.error or None,
                "retry_count": step.retry_count,
                "execution_time": (
                    (step.finished_at - step.started_at).total_seconds()
                    if step.started_at and step.finished_at
                    else None
                ),
            }
        )
    return {
        "run_id": run.pk,
        "task_description": run.task.text,
        "status": run.status,
        "success": run.status == RunStatus.SUCCEEDED,
        "response": run.final_response,
        "executed_steps": executed,
        "execution_time": run.duration_seconds(),
        "replans": run.replans,
        "final_error": (
            {"code": run.error_code, "message": run.error_message} if run.error_code else None
        ),
        "usage": {
            "prompt_tokens": run.prompt_tokens,
            "completion_tokens": run.completion_tokens,
            "tool_calls": run.tool_calls_made,
        },
    }


def run_links(run: Run) -> dict[str, str]:
    """The API paths of a run, as the REST answers and webhook payloads give them."""
    base = f"/api/v1/runs/{run.pk}"
    return {
        "self": base,
        "events": f"{base}/events",
        "cancel": f"{base}/cancel",
        "restart": f"{base}/restart",
        "websocket": f"/ws/api/runs/{run.pk}/",
    }


def run_origin(run: Run) -> dict[str, Any] | None:
    """Where the run came from besides its task (models.Origin): a fork of run `run_id` after
    step `after_step` of its plan version `plan_version`, or a replay of it (with its
    `divergences` so far and the first); None for neither.
    `run_id` is null once the source was deleted."""
    if not run.origin:
        return None
    origin = {
        "kind": run.origin,
        "run_id": run.origin_run_id,
        "after_step": run.origin_step,
        "plan_version": run.origin_plan_version,
    }
    if run.origin == Origin.REPLAY:
        # How often it parted from its source so far, and where first (runs.replays).
        report = run.replay_report or {}
        origin.update(divergences=report.get("count", 0), first_divergence=report.get("first"))
    return origin


def finished_payload(run: Run) -> dict[str, Any]:
    """The `run.finished` payload: what a phone or chat tool needs to tell the owner."""
    return {
        "run_id": run.pk,
        "task": run.task.text,
        "status": run.status,
        "error_code": run.error_code,
        "cause": run.error_cause,
        "final_response": run.final_response,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "origin": run_origin(run),
        "links": run_links(run),
    }


# The fields of a run that every summary shows as they are (REST, MCP).
RUN_FIELDS = (
    "id",
    "task_id",
    "attempt",
    "status",
    "cancel_requested",
    "replans",
    "created_at",
    "started_at",
    "finished_at",
    "final_response",
    "error_code",
    "error_message",
    "prompt_tokens",
    "completion_tokens",
    "tool_calls_made",
    "max_tokens",
    "max_tool_calls",
    "kind",
    "parent_id",
    "root_id",
    "depth",
    "close_policy",
    "envelope",
)
STEP_FIELDS = (
    "index",
    "objective",
    "tool_names",
    "reasoning",
    "depends_on",
    "status",
    "output",
    "error",
    "retry_count",
    "started_at",
    "finished_at",
)


def run_summary(run: Run) -> dict[str, Any]:
    """A run as lists show it: its own fields, the task's text, its profile's name (select
    `task` and `profile` with it: `runs.selectors.runs_for` does) and its links."""
    return {
        **{field: getattr(run, field) for field in RUN_FIELDS},
        "cause": run.error_cause,
        "profile": run.profile.name if run.profile is not None else None,
        "task": run.task.text,
        "fast_path": run.task.fast_path,
        "connection_id": run.connection_id,
        "model": run.llm_model,
        "phase_models": run.phase_models,
        "replayable": run.replayable,
        "not_replayable_because": run.not_replayable_because,
        "origin": run_origin(run),
        "links": run_links(run),
    }


def plan_out(plan: Any) -> dict[str, Any]:
    """A plan with its steps and each step's tool calls (prefetched by
    `selectors.run_detail`); the tool calls stay rows, which the caller's schema reads."""
    return {
        "version": plan.version,
        "reason": plan.reason,
        "created_at": plan.created_at,
        # A version a person edited at its approval: who, and their note.
        "edited": plan.raw.get(EDITED) if isinstance(plan.raw, dict) else None,
        "steps": [
            {
                **{field: getattr(step, field) for field in STEP_FIELDS},
                "tool_calls": list(step.tool_calls.all()),
            }
            for step in plan.steps.all()
        ],
    }


def plan_replacements_out(run: Run) -> dict[str, int]:
    """How often the run's plan was replaced, and by whom (`selectors.plan_replacements`;
    `run.plan_list` prefetched by `selectors.run_detail`)."""
    counted = plan_replacements(run, getattr(run, "plan_list", None))
    return {
        "total": counted.total,
        "edited": counted.edited,
        "rejected": counted.rejected,
        "verifier": counted.verifier,
    }
