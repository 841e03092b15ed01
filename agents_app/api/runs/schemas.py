"""The shapes of tasks and runs that REST (/api/v1/agent/task, /api/v1/runs) and MCP answer
with: a run's summary, detail, plans, steps, tool calls and events; the payloads come from
agents_app.runs.presenters."""

from datetime import datetime
from typing import Annotated, Any

from ninja import Field, Schema
from pydantic import StrictInt

from agents_app.api.schemas import Count, Flag, JsonObject, NonBlankText, Page, PageSize, Text
from agents_app.core.inputs import QUERY_INT_MAX, STORED_INT_MAX
from agents_app.models import ClosePolicy, TimeoutStrategy
from agents_app.runs.listing import SEARCH_MAX_LENGTH, RunListKind, RunListStatus, RunSort
from agents_app.runs.replays import RERUN_MAX, TOOL_NAME_MAX
from agents_app.runs.services import APPROVAL_TIMEOUT_MAX

# An LLM connection by its id or name (GET /api/v1/connections).
ConnectionName = Annotated[StrictInt, Field(ge=1, le=QUERY_INT_MAX)] | Text
# The phase models (seed 004: a large planner, small executors).
PLANNING = (
    "The LLM connection that plans (and analyses the task, splits a team's task, judges a "
    "contract and condenses): its id or name; null: `connection`."
)
VERIFYING = "The LLM connection that judges the result: its id or name; null: `connection`."


class TaskIn(Schema):
    task: NonBlankText = Field(description="What the agent should do.")
    context: JsonObject | None = Field(default=None, description="Any JSON object, < 1 MB.")
    wait: Flag = Field(default=False, description="Answer with the AgentResult once finished.")
    wait_timeout: float | None = Field(
        default=None,
        gt=0,
        le=STORED_INT_MAX,
        allow_inf_nan=False,
        description="Seconds to wait (capped by API_MAX_WAIT).",
    )
    max_tokens: Count | None = Field(default=None, description="LLM token budget of the run.")
    max_tool_calls: Count | None = Field(default=None, description="Tool call budget.")
    approve_plan: Flag = Field(
        default=False, description="Wait for a person to approve the plan before any step runs."
    )
    approval_timeout: Annotated[StrictInt, Field(ge=1, le=APPROVAL_TIMEOUT_MAX)] | None = Field(
        default=None,
        description="Seconds an approval waits for a person; null: APPROVAL_TIMEOUT.",
    )
    approval_on_timeout: TimeoutStrategy | None = Field(
        default=None,
        description="What an expired approval decides; null: APPROVAL_TIMEOUT_STRATEGY.",
    )
    fast_path: Flag | None = Field(
        default=None,
        description="true: run as one step with every tool, without a planner or verifier; "
        "false: always plan; null: by AGENT_FAST_PATH_MAX_CHARS.",
    )
    connection: ConnectionName | None = Field(
        default=None,
        description="The LLM connection to run on: its id or name (GET /api/v1/connections); "
        "null: the default. It executes the steps, and plans and verifies unless named below.",
    )
    planning_connection: ConnectionName | None = Field(default=None, description=PLANNING)
    verifying_connection: ConnectionName | None = Field(default=None, description=VERIFYING)
    team: Flag = Field(
        default=False,
        description="Use the team: a head node splits the task into subtasks, each done by an "
        "agent profile's child run (GET /api/v1/runs/{id}/tree).",
    )
    close_policy: ClosePolicy | None = Field(
        default=None,
        description="When the run ends before its children (cancelled, failed): cancel them "
        "(`cancel`, the default) or let them finish (`finish`).",
    )


class RunLinks(Schema):
    self: str
    events: str
    cancel: str
    restart: str
    websocket: str


class RunOrigin(Schema):
    kind: str = Field(description="fork or replay.")
    run_id: int | None = Field(description="The run it came from; null once that was deleted.")
    after_step: int | None = Field(
        description="A fork: the step of its source it goes on after, numbered as the run page "
        "numbers them (1 is the first); its steps up to it are the source's, copied."
    )
    plan_version: int | None = Field(description="A fork: the source's plan version forked.")
    divergences: int | None = Field(
        None,
        description="A replay's: how often it parted from its source so far (0: never).",
    )
    first_divergence: dict[str, Any] | None = Field(
        None,
        description="A replay's first divergence: kind (request_drift, result_differs, "
        "answer_invalid, answers_ran_out, call_not_recorded, approval_not_recorded, "
        "approval_not_applied), message, step and call (from 1), "
        "anchor (on the diff page), diff (a drifted request's unified diff).",
    )


# A tool's name a replay is asked to run again: text both databases store (no NUL, no lone
# surrogate), refused by the schema with the error shape (runs.replays checks it too).
RerunTool = Annotated[NonBlankText, Field(max_length=TOOL_NAME_MAX)]
RerunTools = Annotated[list[RerunTool], Field(max_length=RERUN_MAX)]


class ReplayIn(Schema):
    rerun: RerunTools | None = Field(
        None,
        description="The MCP and network tools to call again; by default their recorded "
        "results answer them.",
    )


class ForkIn(Schema):
    after_step: Annotated[StrictInt, Field(ge=-QUERY_INT_MAX, le=QUERY_INT_MAX)] = Field(
        description="Go on after this completed step (1 is the first, as the run page numbers "
        "them); every step before it must have ended."
    )
    plan_version: Annotated[StrictInt, Field(ge=-QUERY_INT_MAX, le=QUERY_INT_MAX)] | None = Field(
        default=None, description="The plan version the step is numbered in; null: the latest."
    )
    steps: list[Text] | None = Field(
        default=None,
        description="The remaining steps' objectives, to do instead of the source's; null: "
        "as planned.",
    )
    instruction: Text | None = Field(
        default=None, description="Added to the input of every step the fork runs."
    )
    connection: ConnectionName | None = Field(
        default=None,
        description="The LLM connection (id or name) the fork runs on; null: the source's.",
    )


class RunSummary(Schema):
    id: int
    task_id: int
    task: str
    fast_path: bool | None = Field(description="The task's fast_path option.")
    attempt: int
    status: str
    cancel_requested: bool = Field(
        description="A cancel was asked for: a running run ends cancelled at its next checkpoint."
    )
    replans: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    final_response: str
    error_code: str
    error_message: str
    cause: str = Field(
        description="What went wrong at the root, in a person's words (a failed step's or "
        "call's reason), when the run failed or was stopped; `error_message` may add a "
        "judgement after it (the verifier's). Empty otherwise."
    )
    prompt_tokens: int
    completion_tokens: int
    tool_calls_made: int
    max_tokens: int
    max_tool_calls: int
    connection_id: int | None = Field(
        description="The LLM connection it runs on (GET /api/v1/connections); null: the default."
    )
    model: str = Field(description="The model that connection named for this run.")
    phase_models: dict[str, str] = Field(
        description="When its phases have models of their own (planning_connection, "
        "verifying_connection): the model of each of planning, executing and verifying; {} "
        "when `model` did everything."
    )
    replayable: bool = Field(
        description="It can be replayed (its model calls' answers are kept); false for a run "
        "recorded before they were, and for a fork (replay its source)."
    )
    not_replayable_because: str = Field(
        description="Why it cannot be replayed, when `replayable` is false; empty otherwise."
    )
    origin: RunOrigin | None = Field(
        description="A fork or a replay of another run: which, and after which step (a replay: "
        "how often it diverged, and where first); null for a run of its task."
    )
    kind: str = Field(
        description="task, chat, contract; team (a head node), child (a subtask done by an "
        "agent profile) or micro (a subtask done by a micro agent)."
    )
    parent_id: int | None = Field(description="The run that started it; null: none.")
    root_id: int | None = Field(
        description="The head node of its team's tree; null: it is the root, or in no tree."
    )
    depth: int = Field(description="How deep in its tree: the root is 0.")
    close_policy: ClosePolicy = Field(
        description="When it ends before its children: cancel them or let them finish."
    )
    profile: str | None = Field(description="The agent profile it runs as; null: none.")
    envelope: dict[str, Any] | None = Field(
        description="A child's result for its parent once it ended (status, summary, "
        "artifacts, usage, evidence_step_ids); null: none."
    )
    links: RunLinks


class Accepted(Schema):
    success: bool = True
    run_id: int
    status: str
    links: RunLinks


class ToolCallOut(Schema):
    id: int
    tool: str
    arguments: dict[str, Any]
    result: Any
    error: str
    status: str
    attempt: int
    duration_ms: int | None
    created_at: datetime


class StepOut(Schema):
    index: int
    objective: str
    tool_names: list[str]
    reasoning: str
    depends_on: list[int]
    status: str
    output: str
    error: str
    retry_count: int
    started_at: datetime | None
    finished_at: datetime | None
    tool_calls: list[ToolCallOut]


class PlanEditOut(Schema):
    by: str
    note: str


class PlanOut(Schema):
    version: int
    reason: str
    created_at: datetime
    edited: PlanEditOut | None = Field(
        default=None, description="A version a person edited at its approval: who, and why."
    )
    steps: list[StepOut]


class PlanReplacementsOut(Schema):
    total: int
    edited: int = Field(description="versions a person edited at its approval")
    rejected: int = Field(description="new plans asked by a person who rejected one")
    verifier: int = Field(description="the verifier's replans (`replans`)")


class RunDetail(RunSummary):
    context: dict[str, Any]
    plans: list[PlanOut]
    plan_replacements: PlanReplacementsOut


class RunPage(Schema):
    success: bool = True
    count: int
    page: int
    page_size: int
    results: list[RunSummary]


class EventOut(Schema):
    seq: int
    type: str
    payload: dict[str, Any]
    created_at: datetime


class EventPage(Schema):
    success: bool = True
    run_id: int
    status: str
    events: list[EventOut]
    last_seq: int
    has_more: bool


class RunListQuery(Schema):
    q: Annotated[Text, Field(max_length=SEARCH_MAX_LENGTH)] = Field(
        default="", description="Only runs whose task text contains this (case-insensitive)."
    )
    status: RunListStatus | None = Field(
        default=None,
        description="Only runs in this status (`waiting_approval`: parked on a person's "
        "decision), or in a group: `active` (queued, planning, running, verifying), `waiting` "
        "(waiting_approval, paused).",
    )
    kind: RunListKind | None = Field(
        default=None,
        description="Only runs of this kind (`task`, `chat`, `contract`, `team`, `child`, "
        "`micro`), or `listed`: the kinds the dashboard lists by default (tasks and team "
        "runs). Unset: every kind.",
    )
    sort: RunSort = Field(
        default=RunSort.NEWEST,
        description="`newest` / `oldest` by creation; `longest` / `shortest` by wall time from "
        "start to end (so far, for a run still going; not started: last); `most_tokens` / "
        "`fewest_tokens`.",
    )
    page: Page = 1
    page_size: PageSize = 20


class RunDiffSide(RunSummary):
    plan_version: int | None = Field(description="The plan version compared (its latest).")
    files_from: str = Field(
        description="journal: its workspace journal's record of what it changed; workspace: "
        "its workspace directory as it is now (a run from before the journal)."
    )


class DivergenceOut(Schema):
    field: str = Field(
        description="What differs: objective, tool, arguments, status, result, output, "
        "error, presence (a step or call only one run has), files, error_code, final_response."
    )
    reason: str = Field(description='In a person\'s words: "step 2: call 1 echo arguments differ".')
    anchor: str = Field(description="The row it names: step-2-call-1, step-3, files, outcome.")
    step: int | None = Field(description="The step's number (from 1, as the run page shows).")
    call: int | None = Field(description="The call's number within the step (from 1).")


class RunDiffOut(Schema):
    a: RunDiffSide
    b: RunDiffSide
    steps: list[dict[str, Any]] = Field(
        description="One row a step of the current plans, by index: {step, anchor, a, b, "
        "differs, same, calls: [{call, anchor, a, b, differs}]}; a side is null where its run "
        "has no such step or call. Arguments and results are compared as normalised JSON and "
        "shown cut to 500 characters (result_sha256 is the whole result's)."
    )
    files: list[dict[str, Any]] = Field(
        description="One row a path either run left: {path, a, b, same}, a side {sha256, "
        "size, kind} or null."
    )
    tokens: dict[str, Any] = Field(description="{a, b, difference}: prompt, completion, total.")
    time: dict[str, Any] = Field(description="{a, b, difference_seconds}.")
    outcome: dict[str, Any] = Field(
        description="{a, b, differs, same}: status, error_code, final_response."
    )
    first_divergence: DivergenceOut | None = Field(
        description="Where the runs first part: each step in order (objective, each call, "
        "status, output), then files, then outcome; null when they agree. Tokens and time "
        "never count."
    )
    divergences: int = Field(description="How many differences there are in all.")
