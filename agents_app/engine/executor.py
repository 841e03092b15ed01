"""Executing one step: the model works toward the step's objective with the step's tools."""

import json
import re
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.engine.calls import ask_model
from agents_app.engine.evidence import echoes_task, files_named, files_to_write
from agents_app.engine.hooks import EngineHooks, StopRun, StreamPhase
from agents_app.engine.llm import (
    LLMError,
    LLMProvider,
    LLMRequest,
    LLMResponse,
    ToolCallRequest,
    ToolSchema,
)
from agents_app.engine.prompts import (
    cut_off_message,
    direct_messages,
    evidence_nudge,
    step_messages,
)
from agents_app.engine.states import StepStatus
from tools_app.registry import ToolContext, ToolRegistry, ToolResult

FINISH_TOOL = "finish_task"
TOOL_RESULT_CHARS = 20_000
# Said to a direct step whose answer only repeats the task's words.
ECHOED = "That only repeats the task. Give the result itself."
# The answer to a call that repeats the one that just succeeded (it is not made again).
REPEATED_CALL = json.dumps(
    {
        "error": "This exact call already succeeded; its result is above. Do not repeat it: "
        "give your final answer now."
    }
)
_WIRE_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


@dataclass(frozen=True)
class StepInput:
    index: int
    total: int
    objective: str
    reasoning: str
    tool_names: list[str]
    # (index, objective, status, output) of the steps before this one that it is shown
    # (prompts.shown_earlier), and how many before it are not.
    earlier: list[tuple[int, str, str, str]]
    # A fast-path step (engine/fast.py): the task itself, asked with the short direct prompt.
    direct: bool = False
    # The tools it must use before it may end (one successful call of any of them); None: every
    # tool it names but finish_task, or none for a direct step, which is offered every tool
    # for any task (its evidence is the run's: the files the task names).
    must_use: tuple[str, ...] | None = None
    # A chat answer: the conversation so far as OpenAI messages. The step is that answer: the
    # model's tool calls, then its text; no evidence rules, no finish_task.
    transcript: list[dict[str, Any]] | None = None
    # With a transcript: end after one tool cycle (the model's calls and their results), as a
    # contract agent's cycle does, its next step judged between cycles.
    one_cycle: bool = False
    unshown: int = 0
    # What a person added for every step when they forked the run (Run.instruction).
    instruction: str = ""


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
    # What the step said and heard after its input: the messages it added, in order (the
    # answer itself is `output`), for a transcript to keep. See Progress below.
    added: "Added | None" = None


@dataclass(frozen=True)
class Added:
    """The messages a step added after its input (`messages`, OpenAI-shaped), the model turn
    of each assistant message, the model's thinking per turn, and which of the user messages
    were steered in (message index, the hook's token) rather than written by the engine."""

    messages: list[dict[str, Any]]
    turns: list[list[int]]  # [message index, turn]
    thoughts: list[str]
    steered: list[list[Any]]  # [message index, token]

    def without_results(self) -> list[dict[str, Any]]:
        """The tool calls among `messages` that no tool message answers (a tool message
        answers the earliest open call with its id: some servers reuse ids across turns)."""
        open_calls: list[dict[str, Any]] = []
        for message in self.messages:
            if message.get("role") == "assistant":
                open_calls.extend(message.get("tool_calls") or ())
            elif message.get("role") == "tool":
                for position, call in enumerate(open_calls):
                    if call["id"] == message.get("tool_call_id"):
                        del open_calls[position]
                        break
        return open_calls


def added_of(progress: dict[str, Any]) -> Added:
    """What a step said and heard after its input, from its conversation as a parked step's
    `progress` keeps it (the messages, the thoughts per turn, and its evidence's `start`,
    `turns` and `steered`)."""
    evidence = progress["evidence"]
    start = evidence["start"]
    return Added(
        messages=progress["messages"][start:],
        turns=[[i - start, turn] for i, turn in evidence["turns"]],
        thoughts=list(progress["thoughts"]),
        steered=[[i - start, token] for i, token in evidence["steered"]],
    )


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


class AwaitChild(Exception):
    """A call of a tool whose answer is a child run's (`ToolSpec.child_run`: the micro agent
    tool): the step stops at it, the driver starts the child and parks the run; the step
    resumes from `progress` with the child's result as the call's."""

    def __init__(self, *, handle: Any, tool: str, arguments: dict[str, Any], progress: dict):
        super().__init__(f"{tool} waits for its child run")
        self.handle = handle
        self.tool = tool
        self.arguments = arguments
        self.progress = progress


# Resume.decision of a step whose first call a child run answered (AwaitChild).
CHILD_ANSWERED = "child"


@dataclass(frozen=True)
class Resume:
    """Continue a step parked by AwaitApproval: the first call in `progress` was decided.
    `decision` approve | modify runs it with `arguments`; deny tells the model it was refused.
    Or parked by AwaitChild: `decision` CHILD_ANSWERED, `result` the child's (a ToolResult)."""

    progress: dict[str, Any]
    decision: str
    arguments: dict[str, Any]
    handle: Any
    note: str = ""
    result: Any = None


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
    max_tokens: int | None = None,
    error_retries: int = 0,
) -> StepOutcome:
    """Run the step to an outcome. A tool failure or invalid arguments fail the step; so does
    ending (prose or finish_task) without one successful call of the tools it must use, after
    being told once (EVIDENCE_MISSING; at once after a person denied its call). An LLM
    failure raises LLMError (the run cannot go on without its model); StopRun propagates; a
    call that needs a person raises AwaitApproval, and `resume` continues from there. An
    answer cut off at `max_tokens` is asked for again once, then fails ANSWER_TOO_LONG.

    `error_retries` failed or refused calls are shown to the model to correct before one fails
    the step. A direct step (the fast path: the step is the whole task) also may not end
    before the files its task asks to write exist, nor with an answer that only repeats the
    task's words; each is told once, then fails.

    A chat step (`step.transcript`) answers the conversation: it ends when the model answers
    in text, with every failed call shown to the model, no finish_task and no evidence rules.
    Before each model turn it takes the messages a person steered in (hooks.incoming). Its
    outcome's `added` holds what it said and heard; an exception that cuts it short (StopRun,
    DomainError) carries the same as its `added` attribute, so the caller keeps the transcript
    whole (docs/ARCHITECTURE.md: no call without its result)."""
    return StepExecution(
        provider=provider,
        registry=registry,
        hooks=hooks,
        task=task,
        context=context,
        step=step,
        workspace=workspace,
        run_id=run_id,
        timeout=timeout,
        max_rounds=max_rounds,
        resume=resume,
        max_tokens=max_tokens,
        error_retries=error_retries,
    ).run()


class StepExecution:
    """One execution of a step (see execute_step): its turns, each a request to the model
    (`_request`), then a cut-off answer asked for again (`_cut_off`), a text answer
    (`_text_answer`), or tool calls (`_take_calls`) made one by one (`_make_call`) and their
    results given back (`_call_tool`, `_finish`), until an outcome ends it. The conversation
    and what the step has shown so far (`evidence`) are its attributes; `evidence`, the
    messages, the thoughts, the rounds and the calls still to make are what AwaitApproval
    keeps, and a Resume gives back."""

    def __init__(
        self,
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
        max_tokens: int | None = None,
        error_retries: int = 0,
    ):
        self.deadline = time.monotonic() + timeout
        self.provider, self.registry, self.hooks = provider, registry, hooks
        self.task, self.context, self.step, self.workspace = task, context, step, workspace
        self.run_id, self.timeout, self.max_rounds = run_id, timeout, max_rounds
        self.resume, self.max_tokens, self.error_retries = resume, max_tokens, error_retries
        self.chat = step.transcript is not None
        self.offered = [name for name in step.tool_names if name != FINISH_TOOL]
        if FINISH_TOOL in registry.names() and not self.chat:
            self.offered.append(FINISH_TOOL)
        self.by_wire = {wire_name(name): name for name in self.offered}
        # The tools the step must use: prose, or finish_task alone, is no evidence it did its work.
        self.required = [
            name
            for name in (
                step.must_use
                if step.must_use is not None
                else (() if step.direct or self.chat else step.tool_names)
            )
            if name != FINISH_TOOL
        ]
        self.schemas = [
            ToolSchema(
                name=wire_name(name),
                description=registry.get(name).spec.description,
                parameters=registry.get(name).spec.input_schema,
            )
            for name in self.offered
        ]
        self.messages: list[dict[str, Any]] = []
        self.thoughts: list[str] = []
        self.rounds = 0
        self.pending: list[ToolCallRequest] = []
        self.evidence: dict[str, Any] = {}
        self._start()
        self.cut_offs = 0
        # A direct step is the whole task: the files the task asks to write are its to write.
        self.owed = (
            files_to_write(task) if step.direct and not self.chat and workspace is not None else []
        )
        # The text the model has streamed in the request under way (a chat keeps it if cut).
        self.streamed: list[str] = []
        # In one round of calls: finish_task was refused for want of evidence.
        self.finished_early = False

    def _start(self) -> None:
        """The conversation to go on from: a parked step's progress, a chat's transcript, or
        the step's prompt; and what the step has shown so far."""
        step, resume, evidence = self.step, self.resume, self.evidence
        if resume is not None:
            self.messages = list(resume.progress["messages"])
            self.thoughts = list(resume.progress["thoughts"])
            self.rounds = int(resume.progress["rounds"])
            self.pending = [ToolCallRequest(**call) for call in resume.progress["calls"]]
            self.evidence = evidence = dict(resume.progress.get("evidence", {}))
        elif self.chat:
            self.messages = list(step.transcript or ())
        elif step.direct:
            self.messages = direct_messages(
                task=self.task, context=self.context, instruction=step.instruction
            )
        else:
            self.messages = step_messages(
                task=self.task,
                context=self.context,
                index=step.index,
                total=step.total,
                objective=step.objective,
                reasoning=step.reasoning,
                earlier=step.earlier,
                unshown=step.unshown,
                instruction=step.instruction,
            )
        evidence.setdefault("used", 0)  # successful calls of the step's own tools
        evidence.setdefault("nudged", False)  # told once to use them
        evidence.setdefault("denied", False)  # a person refused one of its calls
        evidence.setdefault("last", "")  # the last successful call, as name + arguments
        evidence.setdefault("result", "")  # and its result, as the model saw it
        evidence.setdefault("repeats", 0)  # times the model asked for that same call again
        evidence.setdefault("errors", 0)  # failed calls shown to the model to correct
        evidence.setdefault("echoed", False)  # told its answer only repeats the task
        evidence.setdefault("read", [])  # the paths its calls read successfully
        evidence.setdefault("start", len(self.messages))  # where the messages it adds begin
        evidence.setdefault("no_tools", False)  # a chat answer asked to answer without tools
        evidence.setdefault("turns", [])  # [message index, model turn] of its assistant messages
        evidence.setdefault("steered", [])  # [message index, token] of the messages steered in

    def run(self) -> StepOutcome:
        """The step's outcome; an exception that cuts it short carries what it added."""
        try:
            return self._take_turns()
        except (StopRun, DomainError) as exc:
            if self.chat and "".join(self.streamed).strip():
                # Cut while the model was answering: what it had said is kept, marked so.
                self.messages.append(
                    {"role": "assistant", "content": "".join(self.streamed) + " …[stopped]"}
                )
            exc.added = self._added()  # type: ignore[attr-defined]
            raise

    # --- the turns ----------------------------------------------------------------------------

    def _take_turns(self) -> StepOutcome:
        decided = self.resume
        while True:
            if self.pending:
                outcome = self._make_calls(decided)
                decided, self.pending = None, []
                if outcome is not None:
                    return self._done(outcome)
                if time.monotonic() >= self.deadline:
                    return self._done(self._timed_out())
                if self.step.one_cycle:
                    # What it said with its calls is in `added`; the cycle's answer is empty.
                    return self._done(StepOutcome(status=StepStatus.COMPLETED))
            if self.rounds >= self.max_rounds:
                return self._done(
                    StepOutcome(
                        status=StepStatus.FAILED,
                        error_code=ErrorCode.MAX_RETRIES_EXCEEDED,
                        error=f"the step did not finish within {self.max_rounds} model turns",
                    )
                )
            outcome = self._turn()
            if outcome is not None:
                return self._done(outcome)

    def _turn(self) -> StepOutcome | None:
        """One model turn: an outcome ends the step; None goes on (with calls to make, or the
        model asked again)."""
        self.hooks.checkpoint()
        if self.chat:
            # The step boundary: what a person sent meanwhile to steer this answer.
            for token, text in self.hooks.incoming(turn=self.rounds):
                self.messages.append({"role": "user", "content": text})
                self.evidence["steered"].append([len(self.messages) - 1, token])
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            return self._timed_out()
        response = self._request(remaining)
        if response is None:
            return self._timed_out()
        if response.cut_off:
            return self._cut_off()
        if not response.tool_calls:
            return self._text_answer(response.content.strip())
        self._take_calls(response.content, response.tool_calls)
        return None

    def _request(self, remaining: float) -> LLMResponse | None:
        """The model's answer to the conversation so far; None when the step's time ran out
        while it was asked."""
        request = LLMRequest(
            messages=self.messages,
            tools=self._tools_for_request(),
            timeout=remaining,
            max_tokens=self.max_tokens,
            tool_required=self._lacks_evidence(),
            interrupt=self.hooks.poll,
            on_token=self._on_token,
            on_reasoning=self._on_reasoning,
        )
        try:
            response = ask_model(self.provider, self.hooks, request, phase=StreamPhase.EXECUTION)
        except LLMError as exc:
            if exc.code == ErrorCode.REQUEST_TIMEOUT and time.monotonic() >= self.deadline - 0.05:
                return None
            raise
        self.streamed.clear()
        self.rounds += 1
        self.thoughts.append(response.reasoning.strip())
        return response

    def _on_token(self, text: str) -> None:
        self.streamed.append(text)
        self.hooks.on_token(text, phase=StreamPhase.EXECUTION, step_index=self.step.index)

    def _on_reasoning(self, text: str) -> None:
        self.hooks.on_token(
            text, phase=StreamPhase.EXECUTION, step_index=self.step.index, reasoning=True
        )

    def _cut_off(self) -> StepOutcome | None:
        """The answer was cut off at `max_tokens`: asked for again once (None); the second
        time the step fails."""
        self.cut_offs += 1
        if self.cut_offs > 1:
            return StepOutcome(
                status=StepStatus.FAILED,
                error_code=ErrorCode.ANSWER_TOO_LONG,
                error=f"the model's answer was cut off at its {self.max_tokens}-token limit twice",
            )
        self.messages.append(cut_off_message(self.max_tokens))
        return None

    def _text_answer(self, said: str) -> StepOutcome | None:
        """The model answered in text, without a call."""
        if not self._lacks_evidence():
            return self._answered(said)
        return self._nudge_or_fail(said)

    def _take_calls(self, content: str, calls: list[ToolCallRequest]) -> None:
        """The model's calls, kept in the conversation and to be made next."""
        self.messages.append(
            {
                "role": "assistant",
                "content": content or None,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                    }
                    for call in calls
                ],
            }
        )
        self.evidence["turns"].append([len(self.messages) - 1, self.rounds - 1])
        self.pending = list(calls)

    # --- the calls ----------------------------------------------------------------------------

    def _make_calls(self, decided: Resume | None) -> StepOutcome | None:
        """The model's pending calls in order; an outcome ends the step, None goes on."""
        self.finished_early = False
        for position, call in enumerate(self.pending):
            outcome = self._make_call(position, call, decided)
            if outcome is not None:
                return outcome
        if self.finished_early and self._lacks_evidence():
            return self._nudge_or_fail("")
        return None

    def _make_call(
        self, position: int, call: ToolCallRequest, decided: Resume | None
    ) -> StepOutcome | None:
        """One call: refused, not made again, parked for a person's decision (AwaitApproval),
        or made. An outcome ends the step; None goes on to the next call."""
        name = self.by_wire.get(call.name, call.name)
        arguments = call.arguments
        if self.chat and self.evidence["no_tools"] and decided is None:
            # Asked to answer in words, it called again: not made, and it is told so.
            self._answer_call(
                call, {"error": "No more tool calls: answer the person now, in words."}
            )
            return None
        if decided is not None and position == 0:
            handle = decided.handle
            if decided.decision == CHILD_ANSWERED:
                return self._take_result(name, call, decided.arguments, handle, decided.result)
            if decided.decision == "deny":
                self.evidence["denied"] = True
                self._answer_call(
                    call, {"error": "A person denied this call.", "note": decided.note}
                )
                return None
            arguments = decided.arguments
            failure = _refusal(
                self.registry, name, replace(call, arguments=arguments), self.offered, self.task
            )
        else:
            if name in self.offered and name in self.registry.names():
                arguments = _without_copied_names(self.registry, name, arguments, self.task)
                call = replace(call, arguments=arguments)
            if _signature(name, arguments) == self.evidence["last"]:
                return self._repeated(name, call)
            failure = _refusal(self.registry, name, call, self.offered, self.task)
            ask = self.hooks.approval_needed(name, arguments) if failure is None else None
            handle = self.hooks.before_tool_call(name, arguments)
            if ask is not None:
                self._park(position, ask, handle, name, call)
        if failure is not None:
            self.hooks.after_tool_call(
                handle, result=None, error_code=failure.code, error=failure.message
            )
            return self._correct_or_fail(call, failure.code, failure.message)
        if self.registry.get(name).spec.child_run:
            self._park(position, None, handle, name, replace(call, arguments=arguments))
        return self._call_tool(name, call, arguments, handle)

    def _answer_call(self, call: ToolCallRequest, answer: dict[str, Any]) -> None:
        """Answer a call that is not made."""
        self.messages.append(
            {"role": "tool", "tool_call_id": call.id, "content": json.dumps(answer)}
        )

    def _repeated(self, name: str, call: ToolCallRequest) -> StepOutcome | None:
        """The model asks again for the call that just succeeded instead of answering (small
        models loop so): it is not made again. Told once; the second time the step ends with
        that call's result, in words, as its answer (a chat is asked to answer without tools)."""
        self.evidence["repeats"] += 1
        if self.evidence["repeats"] > 1 and self.chat:
            self.evidence["no_tools"] = True
        elif self.evidence["repeats"] > 1:
            return StepOutcome(
                status=StepStatus.COMPLETED, output=result_in_words(self.evidence["result"])
            )
        self.messages.append({"role": "tool", "tool_call_id": call.id, "content": REPEATED_CALL})
        return None

    def _park(self, position: int, ask: Any, handle: Any, name: str, call: ToolCallRequest) -> None:
        progress = {
            "messages": self.messages,
            "calls": [asdict(c) for c in self.pending[position:]],
            "thoughts": self.thoughts,
            "rounds": self.rounds,
            "evidence": self.evidence,
        }
        if ask is None:  # a child run answers this call
            raise AwaitChild(handle=handle, tool=name, arguments=call.arguments, progress=progress)
        raise AwaitApproval(
            ask=ask, handle=handle, tool=name, arguments=call.arguments, progress=progress
        )

    # --- the results --------------------------------------------------------------------------

    def _call_tool(
        self, name: str, call: ToolCallRequest, arguments: dict[str, Any], handle: Any
    ) -> StepOutcome | None:
        """Make the call and give its result to the model."""
        self.hooks.checkpoint()
        spec = self.registry.get(name).spec
        tool_timeout = max(0.1, min(spec.timeout, self.deadline - time.monotonic()))
        result = self.registry.call(
            name,
            arguments,
            ToolContext(
                run_id=self.run_id,
                workspace=self.workspace,
                timeout=tool_timeout,
                cancelled=self._stop_asked,
            ),
        )
        return self._take_result(name, call, arguments, handle, result)

    def _stop_asked(self) -> bool:
        """Whether the run must stop (Cancel, Stop, its time up, its lease lost), as a tool
        in the middle of a long call asks it (a sandbox): the next checkpoint says why."""
        try:
            self.hooks.poll()
        except StopRun:
            return True
        return False

    def _take_result(
        self,
        name: str,
        call: ToolCallRequest,
        arguments: dict[str, Any],
        handle: Any,
        result: ToolResult,
    ) -> StepOutcome | None:
        """A call's result (the tool's, or the child run's that answered it) for the model."""
        if not result.ok:
            self.hooks.after_tool_call(
                handle, result=result, error_code=ErrorCode.TOOL_FAILED, error=result.error
            )
            return self._correct_or_fail(call, ErrorCode.TOOL_FAILED, f"{name}: {result.error}")
        self.hooks.after_tool_call(handle, result=result)
        if result.finish:
            return self._finish(call, result.content)
        self.evidence["used"] += 1
        if "FILE_READ" in self.registry.get(name).spec.capabilities and "path" in arguments:
            self.evidence["read"].append(str(arguments["path"]))
        content = json.dumps(result.content, ensure_ascii=False, default=str)
        if len(content) > TOOL_RESULT_CHARS:
            content = content[:TOOL_RESULT_CHARS] + " …[truncated]"
        self.evidence["last"], self.evidence["result"] = _signature(name, arguments), content
        self.messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
        return None

    def _finish(self, call: ToolCallRequest, content: Any) -> StepOutcome | None:
        """finish_task was called: the step's end, unless it has not shown its work yet."""
        content = content if isinstance(content, dict) else {}
        answer = str(content.get("result", ""))
        if content.get("success") is False:
            # The model says it could not do the task: that is no success to verify.
            return StepOutcome(
                status=StepStatus.FAILED,
                error_code=ErrorCode.VERIFICATION_FAILED,
                error=f"finish_task reported that the task was not accomplished: {answer}",
            )
        if self._lacks_evidence():
            missing = self._missing_files()
            why = f"{', '.join(missing)} not written yet" if missing else "no tool used yet"
            self._answer_call(call, {"error": f"Not finished: {why}."})
            self.finished_early = True
            return None
        return self._answered(answer, call_id=call.id)

    def _correct_or_fail(
        self, call: ToolCallRequest, code: ErrorCode, error: str
    ) -> StepOutcome | None:
        """A failed or refused call: shown to the model to correct while `error_retries`
        last (None), else the step fails with its code."""
        evidence = self.evidence
        if evidence["errors"] >= self.error_retries and not self.chat:
            return StepOutcome(status=StepStatus.FAILED, error_code=code, error=error)
        evidence["errors"] += 1
        report = {"error": error, "note": "Correct the call, or answer if you cannot."}
        if evidence["errors"] > self.error_retries:
            # A chat goes on: the model is told, and answers next without tools.
            evidence["no_tools"] = True
            report["note"] = "No more tool calls: answer the person now, in words."
        self._answer_call(call, report)
        return None

    # --- the end ------------------------------------------------------------------------------

    def _answered(self, answer: str, *, call_id: str = "") -> StepOutcome | None:
        """The step's end with `answer` (finish_task's when `call_id`, else prose), or None
        when a direct step's answer only repeats the task's words: told once and asked again;
        the second time the step fails."""
        # Where the task asks for files, they are its result (checked above), not the answer.
        if self.chat or not (self.step.direct and not self.owed and echoes_task(answer, self.task)):
            return StepOutcome(
                status=StepStatus.COMPLETED, output=answer, finished_task=bool(call_id)
            )
        if self.evidence["echoed"]:
            return StepOutcome(
                status=StepStatus.FAILED,
                error_code=ErrorCode.VERIFICATION_FAILED,
                error=f"the answer only repeats the task's words: {answer!r}",
            )
        self.evidence["echoed"] = True
        if call_id:
            refusal = json.dumps({"error": f"Not finished: {ECHOED}"})
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": refusal})
        else:
            self.messages.append({"role": "assistant", "content": answer})
            self.messages.append({"role": "user", "content": ECHOED})
        return None

    def _nudge_or_fail(self, said: str) -> StepOutcome | None:
        """The step would end without one successful call of its tools: tell the model once
        (None: ask it again); the second time the step fails."""
        # After a person's denial the model is not pushed to ask for the call again.
        evidence, required = self.evidence, self.required
        missing = self._missing_files()
        if evidence["nudged"] or evidence["denied"]:
            why = "; a person denied its call" if evidence["denied"] else ""
            if missing and not (required and not evidence["used"]):
                error = f"the task asks for {', '.join(missing)}, which the step did not write"
            else:
                error = (
                    f"the step had to use one of its tools ({', '.join(required)}) "
                    f"and made no successful call{why}"
                )
            return StepOutcome(
                status=StepStatus.FAILED, error_code=ErrorCode.EVIDENCE_MISSING, error=error
            )
        evidence["nudged"] = True
        if said:
            self.messages.append({"role": "assistant", "content": said})
        self.messages.append(evidence_nudge(required, missing=missing))
        return None

    def _timed_out(self) -> StepOutcome:
        return StepOutcome(
            status=StepStatus.TIMEOUT,
            error_code=ErrorCode.EXECUTION_TIMEOUT,
            error=f"step exceeded {self.timeout:g} s",
        )

    def _done(self, outcome: StepOutcome) -> StepOutcome:
        return replace(
            outcome, thinking="\n\n".join(t for t in self.thoughts if t), added=self._added()
        )

    def _added(self) -> Added:
        return added_of(
            {"messages": self.messages, "thoughts": self.thoughts, "evidence": self.evidence}
        )

    # --- the evidence -------------------------------------------------------------------------

    def _missing_files(self) -> list[str]:
        return [name for name in self.owed if not (Path(self.workspace) / name).is_file()]

    def _lacks_evidence(self) -> bool:
        return (bool(self.required) and not self.evidence["used"]) or bool(self._missing_files())

    def _tools_for_request(self) -> list[ToolSchema]:
        """Every offered tool; but once a direct step that still owes files was refused (it
        tried to end, or a call failed), only the tools that can write them, their `path`
        limited to those files, and the tools that read the files the task names (until they
        are read); once they are written, only finish_task. Told in prose, small models repeat
        the mistake; a server that constrains answers to the tools' schemas cannot."""
        evidence, schemas = self.evidence, self.schemas
        if self.chat and (evidence["no_tools"] or self.rounds >= self.max_rounds - 1):
            # A chat answer that keeps failing or repeating its calls, or on its last turn,
            # is asked for its answer in words: no tools to call.
            return []
        missing = self._missing_files()
        if not self.owed or not (evidence["nudged"] or evidence["errors"]):
            return schemas
        if not missing:
            # Written after that: what is left is to say so.
            return [
                schema for schema in schemas if schema.name == wire_name(FINISH_TOOL)
            ] or schemas
        sources = [
            name
            for name in files_named(self.task)
            if name not in self.owed
            and name not in evidence["read"]
            and (Path(self.workspace) / name).is_file()
        ]
        return _guided(self.registry, self.offered, writes=missing, reads=sources) or schemas


def _guided(
    registry: ToolRegistry, offered: list[str], *, writes: list[str], reads: list[str]
) -> list[ToolSchema]:
    """The offered file tools with a `path` argument: those that write a file, `path` one of
    `writes`, and those that read one (not a directory), `path` one of `reads`."""
    guided = []
    for name in offered:
        spec = registry.get(name).spec
        properties = spec.input_schema.get("properties", {})
        if "FILE_WRITE" in spec.capabilities:
            paths = writes
        elif "FILE_READ" in spec.capabilities and "FILE_LIST" not in spec.capabilities:
            paths = reads
        else:
            continue
        if "path" not in properties or not paths:
            continue
        path = {**properties["path"], "enum": list(paths)}
        parameters = {**spec.input_schema, "properties": {**properties, "path": path}}
        guided.append(ToolSchema(wire_name(name), spec.description, parameters))
    return guided


# Where a result's own words are, when it has them (a file read, a page, a text).
_TEXT_KEYS = ("content", "text", "body", "result", "answer", "message")


def result_in_words(result: str) -> str:
    """A call's result (as the model was shown it) as an answer a person reads: its text when
    it has one, else its items or fields as a Markdown list; never the call written out."""
    try:
        value = json.loads(result)
    except ValueError:
        return result
    if isinstance(value, dict):
        for key in _TEXT_KEYS:
            text = value.get(key)
            if isinstance(text, str) and text.strip():
                return text
        for items in value.values():
            if isinstance(items, list) and items:
                return "\n".join(f"- {_item(item)}" for item in items)
        return "\n".join(f"- {key}: {_item(item)}" for key, item in value.items())
    if isinstance(value, list):
        return "\n".join(f"- {_item(item)}" for item in value) or "(nothing)"
    return str(value)


def _item(item: Any) -> str:
    if isinstance(item, dict):
        named = item.get("path") or item.get("name") or item.get("title")
        if named:
            return str(named)
        return ", ".join(f"{key}: {value}" for key, value in item.items())
    return str(item)


def _signature(name: str, arguments: dict[str, Any]) -> str:
    return name + json.dumps(arguments, sort_keys=True, default=str)


def _refusal(
    registry: ToolRegistry, name: str, call: Any, offered: list[str], task: str = ""
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
    return _names_itself(name, call.arguments, task)


def _copies_name(name: str, value: Any, task: str) -> bool:
    own = name.rsplit(".", 1)[-1].lower()
    return (
        isinstance(value, str)
        and len(own) >= 4
        and own in value.lower()
        and own not in task.lower()
    )


def _without_copied_names(
    registry: ToolRegistry, name: str, arguments: dict[str, Any], task: str
) -> dict[str, Any]:
    """The call's arguments without the optional ones that hold the tool's own name (a small
    model's list_files {"path": "list_files"}): the tool's default serves better than copied
    text. A required one stays, for _names_itself to refuse."""
    if not isinstance(arguments, dict):
        return arguments
    required = set(registry.get(name).spec.input_schema.get("required") or ())
    return {
        key: value
        for key, value in arguments.items()
        if key in required or not _copies_name(name, value, task)
    }


def _names_itself(name: str, arguments: dict[str, Any], task: str) -> DomainError | None:
    """A string argument holding the tool's own name ("write_file.txt" for write_file) that
    the task does not mention: a small model copied the name instead of giving a value."""
    for key, value in arguments.items():
        if _copies_name(name, value, task):
            return DomainError(
                ErrorCode.INVALID_ARGUMENTS,
                f"Invalid arguments for tool '{name}': {key} repeats the tool's name instead "
                "of giving a real value",
                {"tool": name, "errors": [{"path": key, "message": "copied the tool's name"}]},
            )
    return None
