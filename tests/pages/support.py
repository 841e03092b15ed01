"""Filling runs with rows as the engine would, and reading the pages' HTML."""

from html.parser import HTMLParser
from typing import Any

from django.utils import timezone

from agents_app.models import Plan, Run, RunStatus, Step, StepStatus, ToolCall, ToolCallStatus
from agents_app.runs.lifecycle import finish
from agents_app.runs.writer import locked_run

LONG_ARGUMENTS = {"path": "notes/" + "a" * 120 + ".txt", "content": "hello"}


def to_status(run: Run, *statuses: str) -> Run:
    with locked_run(run.pk) as w:
        for status in statuses:
            w.transition(status)
    run.refresh_from_db()
    return run


def add_plan(run: Run, objectives: list[str], *, version: int = 1, reason: str = "") -> Plan:
    """A plan of pending steps and its plan_created event; the run goes to running."""
    if run.status == RunStatus.QUEUED:
        to_status(run, RunStatus.PLANNING)
    with locked_run(run.pk) as w:
        plan = Plan.objects.create(run=run, version=version, reason=reason)
        for index, objective in enumerate(objectives):
            Step.objects.create(
                plan=plan,
                run=run,
                index=index,
                objective=objective,
                tool_names=["write_file"],
                depends_on=[index - 1] if index else [],
            )
        w.event(
            "plan_created", {"version": version, "steps": [{"objective": o} for o in objectives]}
        )
        w.transition(RunStatus.RUNNING)
    run.refresh_from_db()
    return plan


def complete_step(
    run: Run,
    plan: Plan,
    index: int,
    *,
    output: str = "done",
    thinking: str = "",
    arguments: dict[str, Any] | None = None,
) -> Step:
    """Run one step through started → tool call → result → completed, with their events."""
    step = Step.objects.get(plan=plan, index=index)
    with locked_run(run.pk) as w:
        step.status = StepStatus.RUNNING
        step.started_at = timezone.now()
        step.save()
        w.event("step_started", {"index": index, "objective": step.objective})
    with locked_run(run.pk) as w:
        call = ToolCall.objects.create(
            run=run, step=step, tool="write_file", arguments=arguments or LONG_ARGUMENTS
        )
        w.set(tool_calls_made=w.run.tool_calls_made + 1)
        w.event(
            "tool_call",
            {
                "tool_call_id": call.pk,
                "step_index": index,
                "tool": call.tool,
                "arguments": call.arguments,
            },
        )
    with locked_run(run.pk) as w:
        ToolCall.objects.filter(pk=call.pk).update(
            status=ToolCallStatus.SUCCEEDED, result={"bytes": 5}, duration_ms=7
        )
        w.event(
            "tool_result", {"tool_call_id": call.pk, "step_index": index, "status": "succeeded"}
        )
    with locked_run(run.pk) as w:
        step.status = StepStatus.COMPLETED
        step.output = output
        step.thinking = thinking
        step.finished_at = timezone.now()
        step.save()
        w.event("step_completed", {"index": index, "output": output, "thinking": thinking})
    run.refresh_from_db()
    return step


def succeed(run: Run, response: str, *, reasoning: str = "All steps are done.") -> Run:
    to_status(run, RunStatus.VERIFYING)
    with locked_run(run.pk) as w:
        w.event(
            "verification",
            {
                "task_complete": True,
                "reasoning": reasoning,
                "should_replan": False,
                "response": response,
            },
        )
        w.set(final_response=response)
        finish(w, RunStatus.SUCCEEDED)
    run.refresh_from_db()
    return run


def fail(run: Run, code: str = "TOOL_FAILED", message: str = "the tool broke") -> Run:
    with locked_run(run.pk) as w:
        finish(w, RunStatus.FAILED, code, message)
    run.refresh_from_db()
    return run


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.depth = 0
        self.top_level: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = (tag, dict(attrs))
        self.elements.append(element)
        if self.depth == 0:
            self.top_level.append(element)
        if tag not in {"br", "hr", "img", "input", "meta", "link"}:
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        self.depth -= 1


def elements(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Elements()
    parser.feed(html)
    return parser.elements


def top_level(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Elements()
    parser.feed(html)
    return parser.top_level


def ids(html: str) -> list[str]:
    return [attrs["id"] for _, attrs in elements(html) if attrs.get("id")]


def by_id(html: str, element_id: str) -> dict[str, str | None]:
    return next(attrs for _, attrs in elements(html) if attrs.get("id") == element_id)
