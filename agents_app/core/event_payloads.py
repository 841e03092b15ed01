"""What each RunEvent's payload holds: one TypedDict per `EventType`, in `EVENT_PAYLOADS`.

The emitters build their payloads with these (a TypedDict is a plain dict at run time: the
rows, the JSON and the sockets' messages are what they were). Nothing checks them on the hot
path; the suite does (tests/event_payloads.py validates every event a test wrote against its
type, and says which types no test emitted), as zulip's `event_schema` does.

Values are as the JSON column holds them (enums as their strings, times as ISO text). A value
from outside (a tool's result, a model's arguments) is `Any`."""

from typing import Any, NotRequired

# typing_extensions (pydantic's dependency): the tests validate these with pydantic, which on
# Python < 3.12 reads only its TypedDict.
from typing_extensions import TypedDict

from agents_app.core.events import EventType

# --- the run ---------------------------------------------------------------------------------


class RunQueuedPayload(TypedDict):
    task: str
    attempt: int
    # a child of a team: its parent and the tree's head node
    parent_id: NotRequired[int]
    root_id: NotRequired[int]


class RunStatusPayload(TypedDict):
    status: str
    # why, when a pause, a resume or a child's end moved it
    reason: NotRequired[str]
    # a person's decision at an approval moved it
    approval_id: NotRequired[int]
    decision: NotRequired[str]


class CancelRequestedPayload(TypedDict):
    # a contract agent's Stop now: the request in flight is cut, not let finish
    now: NotRequired[bool]


class ProgressUpdatePayload(TypedDict):
    current_step: int
    total_steps: int
    percent: int
    status: str


# --- planning --------------------------------------------------------------------------------


class TaskAnalysisPayload(TypedDict):
    # the model's analysis (engine.analysis.TaskAnalysis), or the error that stood in for it
    capabilities: NotRequired[list[str]]
    domain: NotRequired[str]
    error: NotRequired[str]
    # the tools offered: their names, or "all" when the analysis failed
    tools: list[str] | str


class PlanCreatedPayload(TypedDict):
    version: int
    # each step as the planner wrote it (engine.schemas.PlannedStep), or a team's subtask
    steps: list[dict[str, Any]]
    fast_path: NotRequired[bool]
    # a team's plan: its head node's decomposition
    team: NotRequired[bool]
    pattern: NotRequired[str]
    # a plan a person edited at its approval
    edited_by: NotRequired[str | None]


class ReplannedPayload(TypedDict):
    replans: int
    reason: str
    by: NotRequired[str]  # "person": a person denied the plan


# --- steps and their tool calls --------------------------------------------------------------


class StepStartedPayload(TypedDict):
    index: int
    objective: str
    retry_count: int
    resumed_after_interruption: bool
    resumed_after_approval: bool


class ToolCallPayload(TypedDict):
    tool_call_id: int
    step_index: int
    tool: str
    arguments: Any


class ToolResultPayload(TypedDict):
    tool_call_id: int
    step_index: int | None
    status: str
    result: Any
    error_code: str | None
    error: str
    duration_ms: int


class StepCompletedPayload(TypedDict):
    index: int
    output: str
    thinking: str


class StepFailedPayload(TypedDict):
    index: int
    status: str
    error_code: str | None
    error: str | None
    thinking: str


class StepSkippedPayload(TypedDict):
    index: int
    reason: str


class LlmUsagePayload(TypedDict):
    model: str
    prompt_tokens: int
    completion_tokens: int
    step_index: int | None


class LlmRetryPayload(TypedDict):
    code: str
    reason: str
    delay: float
    attempt: int
    attempts: int
    step_index: int | None


# --- a person in the loop --------------------------------------------------------------------


class ApprovalPayload(TypedDict):
    """An approval as approvals.presenters.approval_payload shows it (also REST's and the
    webhooks')."""

    id: int
    run_id: int
    kind: str
    status: str
    tool: str
    arguments: Any
    risk: str
    level: str
    reason: str
    reasoning: str
    # The arguments that carry untrusted text: [{argument, fragment, kind, source,
    # tool_call_id, run_id}] (engine.taint.Taint.as_json).
    taint: list[dict[str, Any]]
    step_index: int | None
    tool_call_id: int | None
    decision_arguments: Any
    decided_by: str | None
    decided_via: str | None
    decided_at: str | None
    expired: bool
    expires_at: str | None
    on_timeout: str | None
    created_at: str
    links: dict[str, str]


class MessageSteeredPayload(TypedDict):
    entry_id: int
    turn: int
    text: str


class ContractEvidence(TypedDict):
    number: int
    tool: str
    arguments: Any
    result: str


class ContractEvaluationPayload(TypedDict):
    cycle: int
    met: bool
    reason: str
    evidence: list[ContractEvidence]
    thinking: NotRequired[str]


class LogFailedPayload(TypedDict):
    path: str
    error: str


# --- a team: the head node's children --------------------------------------------------------


class ChildStartedPayload(TypedDict):
    child_id: int
    step_index: int
    kind: str
    profile: str
    subtask: str


class EnvelopeUsage(TypedDict):
    prompt_tokens: int
    completion_tokens: int
    tool_calls: int


class EnvelopeError(TypedDict):
    code: str | None
    message: str


class ChildFinishedPayload(TypedDict):
    """A child's envelope (orchestration.children.envelope_of), as its parent got it."""

    run_id: int
    kind: str
    profile: str
    status: str
    summary: str
    summary_tokens: int
    artifacts: list[str]
    usage: EnvelopeUsage
    evidence_step_ids: list[int]
    error: NotRequired[EnvelopeError]


class ChildRetriedPayload(TypedDict):
    index: int
    failed_child_id: int
    child_id: int
    recovery: str
    retry: int
    limit: int
    delay: int | float


class SubtaskQueuedPayload(TypedDict):
    index: int
    reason: str
    waiting_for: str  # the profile it waits for


class DelegationRefusedPayload(TypedDict):
    index: int
    reason: str


class DecompositionRefusedPayload(TypedDict):
    reason: str
    attempt: int  # 1: the head node splits the task once more; 2: one agent does it whole
    then: str  # "split again" | "single agent"


class EnvelopesTrimmedPayload(TypedDict):
    tokens: int
    budget: int
    children: int


# --- the end ---------------------------------------------------------------------------------


class VerificationPayload(TypedDict):
    """The verifier's verdict (engine.schemas.VerificationOutput) and what it streamed."""

    task_complete: bool
    reasoning: str
    should_replan: bool
    response: str
    evidence: list[int]
    thinking: NotRequired[str]


class ReplayDivergedPayload(TypedDict):
    """engine.replay.Divergence.as_dict: how (`kind`, a DivergenceKind), where (`step` and
    `call` from 1, `anchor` on the diff page), in words, and a drifted request's diff."""

    kind: str
    message: str
    step: int | None
    call: int | None
    diff: str
    anchor: str


class ErrorPayload(TypedDict):
    code: str | None
    message: str
    details: dict[str, Any]


class ResultUsage(TypedDict):
    prompt_tokens: int
    completion_tokens: int
    tool_calls: int


class ResultError(TypedDict):
    code: str
    message: str


class ResultPayload(TypedDict):
    """Seed 000's AgentResult (runs.presenters.agent_result)."""

    run_id: int
    task_description: str
    status: str
    success: bool
    response: str
    executed_steps: list[dict[str, Any]]
    execution_time: float | None
    replans: int
    final_error: ResultError | None
    usage: ResultUsage


EVENT_PAYLOADS: dict[EventType, type] = {
    EventType.RUN_QUEUED: RunQueuedPayload,
    EventType.RUN_STATUS: RunStatusPayload,
    EventType.CANCEL_REQUESTED: CancelRequestedPayload,
    EventType.PROGRESS_UPDATE: ProgressUpdatePayload,
    EventType.TASK_ANALYSIS: TaskAnalysisPayload,
    EventType.PLAN_CREATED: PlanCreatedPayload,
    EventType.REPLANNED: ReplannedPayload,
    EventType.STEP_STARTED: StepStartedPayload,
    EventType.TOOL_CALL: ToolCallPayload,
    EventType.TOOL_RESULT: ToolResultPayload,
    EventType.STEP_COMPLETED: StepCompletedPayload,
    EventType.STEP_FAILED: StepFailedPayload,
    EventType.STEP_SKIPPED: StepSkippedPayload,
    EventType.LLM_USAGE: LlmUsagePayload,
    EventType.LLM_RETRY: LlmRetryPayload,
    EventType.APPROVAL_REQUIRED: ApprovalPayload,
    EventType.APPROVAL_DECIDED: ApprovalPayload,
    EventType.MESSAGE_STEERED: MessageSteeredPayload,
    EventType.CONTRACT_EVALUATION: ContractEvaluationPayload,
    EventType.LOG_FAILED: LogFailedPayload,
    EventType.CHILD_STARTED: ChildStartedPayload,
    EventType.CHILD_FINISHED: ChildFinishedPayload,
    EventType.CHILD_RETRIED: ChildRetriedPayload,
    EventType.SUBTASK_QUEUED: SubtaskQueuedPayload,
    EventType.DELEGATION_REFUSED: DelegationRefusedPayload,
    EventType.DECOMPOSITION_REFUSED: DecompositionRefusedPayload,
    EventType.ENVELOPES_TRIMMED: EnvelopesTrimmedPayload,
    EventType.REPLAY_DIVERGED: ReplayDivergedPayload,
    EventType.VERIFICATION: VerificationPayload,
    EventType.ERROR: ErrorPayload,
    EventType.RESULT: ResultPayload,
}
