"""Seed 003's micro agent from any run: a step's call of `start_micro_agent` (a tool whose
answer is a child run's, ToolSpec.child_run) starts a child of kind micro and parks the run in
`waiting_children`, holding no worker, as a head node does; the child's end queues the run
again (children.hand_back) and its finish_task result is the call's result.

The guards are a team's: the tree's depth (TEAM_MAX_DEPTH), what the root's budget has left,
and no second micro agent given the same task by the same run while the first works or after
it succeeded. A call a guard refuses is answered at once with the reason, as a failed call."""

from typing import Any

from django.conf import settings

from agents_app.engine.executor import AwaitChild
from agents_app.models import Run, RunStatus, Step
from agents_app.orchestration.children import WORKING, delegated_before, spawn_child, tree_usage
from agents_app.orchestration.head_node import micro_tools
from agents_app.runs.recipes import RecipeContext
from agents_app.runs.writer import RunWriter
from tools_app.registry import ToolResult

MICRO = "micro"


def refusal(run: Run, text: str) -> str:
    """Why no micro agent may start for `run` with `text` ("" when one may)."""
    if run.depth + 1 > settings.TEAM_MAX_DEPTH:
        return f"delegation depth {run.depth + 1} is over TEAM_MAX_DEPTH"
    root = run if run.pk == run.tree_root_id else Run.objects.get(pk=run.tree_root_id)
    used = tree_usage(root.pk)
    if used["tokens"] >= root.max_tokens or used["tool_calls"] >= root.max_tool_calls:
        return "the run's budget is spent"
    earlier = delegated_before(run, MICRO, text)
    if earlier is not None:
        return f"a micro agent was given the same task (run {earlier.pk}, {earlier.status})"
    return ""


def micro_start(ex: RecipeContext, w: RunWriter, step: Step, wait: AwaitChild) -> bool:
    """Start the micro agent `wait`'s call asks for, in `w`'s transaction, and park the run:
    True. A refused one is kept in the step's progress as the call's answer and the run goes
    on: False. Either way the step resumes from its progress (micro_answer)."""
    started = micro_spawn(ex, w, step, wait)
    if started:
        w.transition(RunStatus.WAITING_CHILDREN)
    return started


def micro_spawn(ex: RecipeContext, w: RunWriter, step: Step, wait: AwaitChild) -> bool:
    """micro_start without the parking: the caller parks the run once (the steps of a
    parallel plan that called for micro agents: worker.parallel starts them all, then parks).
    True when the micro agent started, False when it was refused."""
    run = w.run
    arguments = wait.arguments
    text = str(arguments.get("task", ""))
    progress = {**wait.progress, "child_call_id": wait.handle.call_id, "child_arguments": arguments}
    refused = refusal(run, text)
    if refused:
        step.progress = {**progress, "child_refused": refused}
        step.save(update_fields=["progress"])
        return False
    micro = {
        "available_actions": arguments.get("available_tools"),
        "exclude_actions": arguments.get("excluded_tools") or [],
    }
    child = spawn_child(
        w,
        step,
        kind=MICRO,
        text=text,
        context={"parent_task": run.task.text[:2000]},
        persona=str(arguments.get("persona", "")),
        allowed_tools=micro_tools(ex, run, micro),
        max_steps=arguments.get("max_steps"),
    )
    step.progress = {**progress, "child_id": child.pk}
    step.save(update_fields=["progress"])
    return True


def micro_wait(w: RunWriter, progress: dict[str, Any]) -> bool:
    """Park the run again, in `w`'s transaction, while the micro agent its step waits for
    works still (the run was paused and resumed meanwhile): True. Read under the run's lock,
    so a child ending now finds it parked and queues it (children.hand_back)."""
    if not micro_working(progress):
        return False
    w.transition(RunStatus.WAITING_CHILDREN)
    return True


def micro_working(progress: dict[str, Any]) -> bool:
    """Whether the micro agent a step's `progress` waits for works still. Asked under the
    run's lock before parking on it: a child that ends after finds the run parked."""
    child_id = progress.get("child_id")
    return child_id is not None and Run.objects.filter(pk=child_id, status__in=WORKING).exists()


def micro_answer(progress: dict[str, Any]) -> ToolResult | None:
    """The answer to a step's call of start_micro_agent: the reason it was refused, or its
    child's finish_task result (its final response) or error. None: the child works still."""
    if progress.get("child_refused"):
        return ToolResult(ok=False, error=f"refused: {progress['child_refused']}")
    child = Run.objects.filter(pk=progress.get("child_id")).first()
    if child is None:
        return ToolResult(ok=False, error="the micro agent's run is gone")
    if not child.is_terminal:
        return None
    if child.status == RunStatus.SUCCEEDED:
        return ToolResult(
            ok=True, content={"micro_agent_run_id": child.pk, "result": child.final_response}
        )
    why = f"{child.error_code}: {child.error_message}".strip(": ") or child.status
    return ToolResult(ok=False, error=f"the micro agent (run {child.pk}) {child.status}: {why}")
