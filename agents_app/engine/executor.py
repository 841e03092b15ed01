"""Executing one step: the model works toward the step's objective with the step's tools."""

import json
import re
import time
from dataclasses import asdict, dataclass, replace
from typing import Any

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.engine.hooks import EngineHooks
from agents_app.engine.llm import LLMError, LLMProvider, LLMRequest, ToolCallRequest, ToolSchema
from agents_app.engine.prompts import step_messages
from agents_app.engine.states import StepStatus
from tools_app.registry import ToolContext, ToolRegistry

FINISH_TOOL = "finish_task"
TOOL_RESULT_CHARS = 20_000
_WIRE_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


@dataclass(frozen=True)
class StepInput:
    index: int
    total: int
    objective: str
    reasoning: str
    tool_names: list[str]
    # (index, objective, status, output) of the steps before this one.
    earlier: list[tuple[int, str, str, str]]


@dataclass(frozen=True)
class StepOutcome:
    status: StepStatus  # completed | failed | timeout
    output: str = ""
    error_code: ErrorCode | str = ""  # empty when the step completed
    error: str = ""
    # finish_task was called: the task is done and `output` is the final answer.
    finished_task: bool = False
    # What the model thought on the way (reasoning fields and <think> blocks), for people.
    thinking: str = ""


def wire_name(tool: str) -> str:
    """OpenAI function names allow [a-zA-Z0-9_-]; MCP tools are named `server.tool`."""
    return _WIRE_UNSAFE.sub("__", tool)[:64]


class AwaitApproval(Exception):
    """A call needs a person's decision: the step stops before it and can resume from
    `progress` (the conversation so far and the calls still to make, JSON)."""

    def __init__(
        self, *, ask: Any, handle: Any, tool: str, arguments: dict[str, Any], progress: dict
    ):
        super().__init__(f"{tool} waits for approval")
        self.ask = ask
        self.handle = handle
        self.tool = tool
        self.arguments = arguments
        self.progress = progress


@dataclass(frozen=True)
class Resume:
    """Continue a step parked by AwaitApproval: the first call in `progress` was decided.
    `decision` approve | modify runs it with `arguments`; deny tells the model it was refused."""

    progress: dict[str, Any]
    decision: str
    arguments: dict[str, Any]
    handle: Any
    note: str = ""


def execute_step(
    *,
    provider: LLMProvider,
    registry: ToolRegistry,
    hooks: EngineHooks,
    task: str,
    context: dict[str, Any],
    step: StepInput,
    workspace: Any,
    run_id: int,
    timeout: float,
    max_rounds: int,
    resume: Resume | None = None,
) -> StepOutcome:
    """Run the step to an outcome. A tool failure or invalid arguments fail the step; an LLM
    failure raises LLMError (the run cannot go on without its model); StopRun propagates; a
    call that needs a person raises AwaitApproval, and `resume` continues from there."""
    deadline = time.monotonic() + timeout
    offered = [name for name in step.tool_names if name != FINISH_TOOL]
    if FINISH_TOOL in registry.names():
        offered.append(FINISH_TOOL)
    by_wire = {wire_name(name): name for name in offered}
    schemas = [
        ToolSchema(
            name=wire_name(name),
            description=registry.get(name).spec.description,
            parameters=registry.get(name).spec.input_schema,
        )
        for name in offered
    ]
    if resume is not None:
        messages = list(resume.progress["messages"])
        thoughts = list(resume.progress["thoughts"])
        rounds = int(resume.progress["rounds"])
        pending = [ToolCallRequest(**call) for call in resume.progress["calls"]]
    else:
        messages = step_messages(
            task=task,
            context=context,
            index=step.index,
            total=step.total,
            objective=step.objective,
            reasoning=step.reasoning,
            earlier=step.earlier,
        )
        thoughts, rounds, pending = [], 0, []

    def done(outcome: StepOutcome) -> StepOutcome:
        return replace(outcome, thinking="\n\n".join(t for t in thoughts if t))

    def timed_out() -> StepOutcome:
        return StepOutcome(
            status=StepStatus.TIMEOUT,
            error_code=ErrorCode.EXECUTION_TIMEOUT,
            error=f"step exceeded {timeout:g} s",
        )

    def park(position: int, ask: Any, handle: Any, name: str, call: ToolCallRequest) -> None:
        progress = {
            "messages": messages,
            "calls": [asdict(c) for c in pending[position:]],
            "thoughts": thoughts,
            "rounds": rounds,
        }
        raise AwaitApproval(
            ask=ask, handle=handle, tool=name, arguments=call.arguments, progress=progress
        )

    def make_calls(decided: Resume | None) -> StepOutcome | None:
        """The model's pending calls in order; an outcome ends the step, None goes on."""
        for position, call in enumerate(pending):
            name = by_wire.get(call.name, call.name)
            arguments = call.arguments
            if decided is not None and position == 0:
                handle = decided.handle
                if decided.decision == "deny":
                    refusal = {"error": "A person denied this call.", "note": decided.note}
                    messages.append(
                        {"role": "tool", "tool_call_id": call.id, "content": json.dumps(refusal)}
                    )
                    continue
                arguments = decided.arguments
                failure = _refusal(registry, name, replace(call, arguments=arguments), offered)
            else:
                failure = _refusal(registry, name, call, offered)
                ask = hooks.approval_needed(name, arguments) if failure is None else None
                handle = hooks.before_tool_call(name, arguments)
                if ask is not None:
                    park(position, ask, handle, name, call)
            if failure is not None:
                hooks.after_tool_call(
                    handle, result=None, error_code=failure.code, error=failure.message
                )
                return StepOutcome(
                    status=StepStatus.FAILED, error_code=failure.code, error=failure.message
                )
            hooks.checkpoint()
            spec = registry.get(name).spec
            tool_timeout = max(0.1, min(spec.timeout, deadline - time.monotonic()))
            result = registry.call(
                name,
                arguments,
                ToolContext(run_id=run_id, workspace=workspace, timeout=tool_timeout),
            )
            if not result.ok:
                hooks.after_tool_call(
                    handle, result=result, error_code=ErrorCode.TOOL_FAILED, error=result.error
                )
                return StepOutcome(
                    status=StepStatus.FAILED,
                    error_code=ErrorCode.TOOL_FAILED,
                    error=f"{name}: {result.error}",
                )
            hooks.after_tool_call(handle, result=result)
            if result.finish:
                answer = (
                    result.content.get("result", "") if isinstance(result.content, dict) else ""
                )
                return StepOutcome(
                    status=StepStatus.COMPLETED, output=str(answer), finished_task=True
                )
            content = json.dumps(result.content, ensure_ascii=False, default=str)
            if len(content) > TOOL_RESULT_CHARS:
                content = content[:TOOL_RESULT_CHARS] + " …[truncated]"
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
        return None

    decided = resume
    while True:
        if pending:
            outcome = make_calls(decided)
            decided = None
            if outcome is not None:
                return done(outcome)
            if time.monotonic() >= deadline:
                return done(timed_out())
        if rounds >= max_rounds:
            return done(
                StepOutcome(
                    status=StepStatus.FAILED,
                    error_code=ErrorCode.MAX_RETRIES_EXCEEDED,
                    error=f"the step did not finish within {max_rounds} model turns",
                )
            )
        hooks.checkpoint()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return done(timed_out())
        request = LLMRequest(
            messages=messages,
            tools=schemas,
            timeout=remaining,
            on_token=lambda text: hooks.on_token(text, phase="execution", step_index=step.index),
            on_reasoning=lambda text: hooks.on_token(
                text, phase="execution", step_index=step.index, reasoning=True
            ),
        )
        try:
            response = provider.complete(request)
        except LLMError as exc:
            if exc.code == ErrorCode.REQUEST_TIMEOUT and time.monotonic() >= deadline - 0.05:
                return done(timed_out())
            raise
        rounds += 1
        hooks.on_llm_usage(response.usage, response.model)
        thoughts.append(response.reasoning.strip())
        if not response.tool_calls:
            return done(StepOutcome(status=StepStatus.COMPLETED, output=response.content.strip()))
        messages.append(
            {
                "role": "assistant",
                "content": response.content or None,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                    }
                    for call in response.tool_calls
                ],
            }
        )
        pending = list(response.tool_calls)


def _refusal(
    registry: ToolRegistry, name: str, call: Any, offered: list[str]
) -> DomainError | None:
    if name not in offered:
        return DomainError(
            ErrorCode.TOOL_NOT_FOUND,
            f"Tool '{name}' is not available in this step",
            {"requested_tool": name, "available_tools": offered},
        )
    if call.arguments_error:
        return DomainError(ErrorCode.INVALID_ARGUMENTS, f"{name}: {call.arguments_error}")
    try:
        registry.validate_arguments(name, call.arguments)
    except DomainError as exc:
        return exc
    return None
