"""A task, its runs, their plans, steps, tool calls and events: a run's whole state."""

from enum import StrEnum

from django.conf import settings
from django.db import models
from django.utils import timezone

from agents_app.engine import states


class Task(models.Model):
    """What a person asked for. Each execution attempt is a Run."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tasks"
    )
    text = models.TextField()
    context = models.JSONField(default=dict, blank=True)
    max_tokens = models.PositiveIntegerField(
        null=True, blank=True, help_text="Overrides RUN_MAX_TOKENS."
    )
    max_tool_calls = models.PositiveIntegerField(
        null=True, blank=True, help_text="Overrides RUN_MAX_TOOL_CALLS."
    )
    approve_plan = models.BooleanField(
        default=False, help_text="Show the plan and wait for a go before any step runs."
    )
    fast_path = models.BooleanField(
        null=True,
        blank=True,
        help_text="Run as one step without a planner or verifier: yes, no, or empty for "
        "AGENT_FAST_PATH_MAX_CHARS.",
    )
    approval_timeout = models.PositiveIntegerField(
        null=True, blank=True, help_text="Seconds an approval waits; overrides APPROVAL_TIMEOUT."
    )
    max_seconds = models.PositiveIntegerField(
        null=True, blank=True, help_text="Seconds a run may take; overrides AGENT_RUN_TIMEOUT."
    )
    approval_on_timeout = models.CharField(
        max_length=10,
        blank=True,
        help_text="deny | skip | cancel; overrides APPROVAL_TIMEOUT_STRATEGY.",
    )
    # The LLM connection the person picked; null: the default at the time each run is created.
    connection = models.ForeignKey(
        "agents_app.LLMConnection",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="tasks",
    )
    # Phase models (seed 004, a large planner and small executors): the connection that plans
    # (task analysis, team decomposition, contract evaluation and condensation too) and the
    # one that verifies; null: the run's connection, which executes the steps.
    planning_connection = models.ForeignKey(
        "agents_app.LLMConnection",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="planning_tasks",
    )
    verifying_connection = models.ForeignKey(
        "agents_app.LLMConnection",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="verifying_tasks",
    )
    # Done by a team: a head node splits it and agent profiles do the parts (orchestration).
    team = models.BooleanField(default=False)
    # A child's or micro agent's: who it speaks as (its system prompt starts with it) and the
    # tools it may use (null: every tool; `excluded_tools` are left out either way).
    persona = models.TextField(blank=True)
    allowed_tools = models.JSONField(null=True, blank=True)
    excluded_tools = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.text[:60]

    def allows_tool(self, name: str) -> bool:
        if name in (self.excluded_tools or ()):
            return False
        return self.allowed_tools is None or name in self.allowed_tools


def _choices_of(vocabulary: type[StrEnum]) -> type[models.TextChoices]:
    """TextChoices with exactly the members of a plain enum (labels made from the names, as a
    class statement makes them): the engine's vocabulary and the column's choices are one."""
    return models.TextChoices(
        vocabulary.__name__, [(m.name, m.value) for m in vocabulary], module=__name__
    )


# Defined in agents_app.engine.states, where the engine reads them without Django.
RunStatus = _choices_of(states.RunStatus)


TERMINAL_STATUSES = frozenset({RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED})
# No worker holds a parked run; the release of the kill switch or a decision queues it again.
PARKED_STATUSES = frozenset(
    {RunStatus.PAUSED, RunStatus.WAITING_APPROVAL, RunStatus.WAITING_CHILDREN}
)

# The one table of allowed status changes; nothing else decides what may follow what.
ACTIVE_STATUSES = frozenset(
    {RunStatus.QUEUED, RunStatus.PLANNING, RunStatus.RUNNING, RunStatus.VERIFYING}
)
_ENDS = frozenset({RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.PAUSED})
RUN_TRANSITIONS: dict[str, frozenset[str]] = {
    RunStatus.QUEUED: frozenset({RunStatus.PLANNING}) | _ENDS,
    RunStatus.PLANNING: frozenset({RunStatus.RUNNING, RunStatus.WAITING_APPROVAL}) | _ENDS,
    RunStatus.RUNNING: frozenset(
        {RunStatus.VERIFYING, RunStatus.WAITING_APPROVAL, RunStatus.WAITING_CHILDREN}
    )
    | _ENDS,
    RunStatus.VERIFYING: frozenset({RunStatus.SUCCEEDED, RunStatus.PLANNING}) | _ENDS,
    RunStatus.PAUSED: ACTIVE_STATUSES | {RunStatus.FAILED, RunStatus.CANCELLED},
    # PLANNING: a person rejected the plan, the planner makes a new one with their feedback.
    RunStatus.WAITING_APPROVAL: frozenset(
        {RunStatus.RUNNING, RunStatus.PLANNING, RunStatus.FAILED, RunStatus.CANCELLED}
    ),
    # RUNNING: a child ended and the head node takes its result (or starts what it unblocked).
    RunStatus.WAITING_CHILDREN: frozenset(
        {RunStatus.RUNNING, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.PAUSED}
    ),
    RunStatus.SUCCEEDED: frozenset(),
    RunStatus.FAILED: frozenset(),
    RunStatus.CANCELLED: frozenset(),
}


class RunKind(models.TextChoices):
    """What a run is for; every kind runs on the one engine (docs/ARCHITECTURE.md)."""

    TASK = "task"  # plan, execute, verify, replan
    CHAT = "chat"  # one answer in a conversation: the transcript is its input
    CONTRACT = "contract"  # a contract agent's attempt: tool cycles, each self-evaluated
    TEAM = "team"  # a head node: its plan's steps are subtasks, each done by a child run
    CHILD = "child"  # a subtask of a head node, done by one agent profile; returns an envelope
    MICRO = "micro"  # a step's micro agent: a temporary persona, ended by finish_task


class ClosePolicy(models.TextChoices):
    """What becomes of a run's children when it ends before them."""

    CANCEL = "cancel", "cancel its children"
    FINISH = "finish", "let them finish"


class Origin(models.TextChoices):
    """Where a run came from besides its task (issue 36): not its kind, which still decides how
    it runs (runs.recipes); an origin changes only where it starts and what answers it."""

    NONE = "", "its task"
    FORK = "fork", "fork"  # of origin_run after step origin_step: steps up to it copied
    REPLAY = "replay", "replay"  # of origin_run: its recorded answers instead of a model


# Why a run recorded before its model calls' answers were kept (issue 36) cannot be replayed.
NOT_RECORDED = "Recorded before model answers were kept: cannot be replayed"


class Run(models.Model):
    """One execution attempt of a Task. Its rows are the run's whole state: no worker keeps any."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="runs")
    kind = models.CharField(max_length=10, choices=RunKind.choices, default=RunKind.TASK)
    # A chat answer: the conversation whose transcript it reads and appends to.
    conversation = models.ForeignKey(
        "agents_app.Conversation",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="runs",
    )
    # A child run (kinds child and micro): the run that started it, the step it does, the head
    # of its tree (whose budget the whole tree spends) and how deep it is (the root is 0).
    parent = models.ForeignKey(
        "self", on_delete=models.CASCADE, null=True, blank=True, related_name="children"
    )
    parent_step = models.ForeignKey(
        "agents_app.Step",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="children",
    )
    root = models.ForeignKey(
        "self", on_delete=models.CASCADE, null=True, blank=True, related_name="descendants"
    )
    depth = models.PositiveSmallIntegerField(default=0)
    # The agent profile it runs as (a head node's is the orchestrator's).
    profile = models.ForeignKey(
        "agents_app.AgentProfile",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="runs",
    )
    close_policy = models.CharField(
        max_length=10, choices=ClosePolicy.choices, default=ClosePolicy.CANCEL
    )
    # A child's (from, to, subtask): a parent never gives the same subtask to the same agent
    # twice (orchestration.children.subtask_key).
    delegation = models.CharField(max_length=120, blank=True, db_index=True)
    # A child's bounded result for its parent (orchestration.envelopes), written as it ends.
    envelope = models.JSONField(null=True, blank=True)
    # A head node's shared context: decisions, artifacts and intermediate results its children
    # read when they start and add to through it (orchestration.messages).
    shared = models.JSONField(default=dict, blank=True)
    # Denormalised from task.owner so every scoped read is one indexed filter.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="runs"
    )
    attempt = models.PositiveIntegerField(default=1)
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.QUEUED)
    replans = models.PositiveIntegerField(default=0)
    replan_reason = models.TextField(blank=True)
    final_response = models.TextField(blank=True)
    error_code = models.CharField(max_length=40, blank=True)
    error_message = models.TextField(blank=True)
    # What went wrong at the root, in a person's words (a failed step's or call's reason); the
    # message may add a judgement after it (the verifier's). Empty unless the run ended
    # unsuccessfully.
    error_cause = models.TextField(blank=True)

    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    tool_calls_made = models.PositiveIntegerField(default=0)
    max_tokens = models.PositiveIntegerField()
    max_tool_calls = models.PositiveIntegerField()
    # The LLM connection it runs on and the model that connection named when the worker built
    # its provider; null (a run older than connections, or its connection deleted): the default.
    connection = models.ForeignKey(
        "agents_app.LLMConnection",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="runs",
    )
    llm_model = models.CharField("model", max_length=200, blank=True)
    # The model of each phase (ModelPhase -> model) as the worker built their providers; empty
    # until then. Shown on the run page when the phases' models differ.
    phase_models = models.JSONField(default=dict, blank=True)

    cancel_requested = models.BooleanField(default=False)
    # A person paused it (seed 001's lifecycle): it parks at its next step boundary and stays
    # paused, the kill switch's release aside, until they resume it.
    pause_requested = models.BooleanField(default=False)
    # While paused: the status to go back to when the kill switch is released.
    resume_status = models.CharField(max_length=20, choices=RunStatus.choices, blank=True)
    # While parked (paused or waiting for approval): since when; the time parked so far does not
    # count against the run's deadline.
    parked_at = models.DateTimeField(null=True, blank=True)
    parked_seconds = models.FloatField(default=0)
    # Lease: the worker holding it may execute the run; an expired lease may be taken over.
    lease_owner = models.CharField(max_length=64, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # Last RunEvent.seq; advanced under the run's row lock so seqs are gapless per run.
    event_seq = models.PositiveIntegerField(default=0)
    # Last ModelExchange.seq (models.exchanges), advanced by the lease holder's commits.
    exchange_seq = models.PositiveIntegerField(default=0)
    # Its model calls' answers are kept (ModelExchange): false for a run recorded before they
    # were (issue 36), which therefore cannot be replayed.
    recorded = models.BooleanField(default=True)
    # Its workspace journal (models.journal, runs.journal): false for a run from before it was
    # kept. `journal_seq` is the last WorkspaceChange.seq, `journal_bytes` the bytes of the
    # contents it stored (each distinct content once), counted against WORKSPACE_JOURNAL_MAX_BYTES.
    # `journal_complete_until`: set when the journal stopped (over its quota, or a workspace of
    # more than WORKSPACE_JOURNAL_MAX_FILES entries), the last seq of the complete journal; the
    # workspace after any later point cannot be rebuilt (not forkable past it). Null: complete.
    journaled = models.BooleanField(default=True)
    journal_seq = models.PositiveIntegerField(default=0)
    journal_bytes = models.BigIntegerField(default=0)
    journal_complete_until = models.PositiveIntegerField(null=True, blank=True)
    # A fork or a replay (Origin) of `origin_run`; a fork continues after step `origin_step`
    # (numbered as the run page numbers them) of plan version `origin_plan_version` of its
    # source, with what it was asked to change (`origin_options`: an edited remaining plan, an
    # extra instruction, another connection; a replay's tools to run again). A source deleted
    # leaves its forks and replays, saying what they were.
    origin = models.CharField(max_length=10, choices=Origin.choices, blank=True, default="")
    origin_run = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="derived"
    )
    origin_step = models.PositiveIntegerField(null=True, blank=True)
    origin_plan_version = models.PositiveIntegerField(null=True, blank=True)
    origin_options = models.JSONField(default=dict, blank=True)
    # A replay's divergences from its source (runs.replays): {"count": n, "first": the first
    # one as engine.replay.Divergence.as_dict gives it}; empty until the first.
    replay_report = models.JSONField(default=dict, blank=True)
    # Queued behind its person's other runs (runs.admission): no message was sent for it yet;
    # one of theirs ending or parking lets it go.
    waiting_turn = models.BooleanField(default=False)

    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["owner", "status", "-created_at"]),
            models.Index(fields=["profile", "status"]),
            models.Index(
                fields=["owner", "id"],
                condition=models.Q(waiting_turn=True),
                name="agents_app_run_waiting_turn",
            ),
        ]

    def __str__(self) -> str:
        return f"Run {self.pk} ({self.status})"

    @property
    def tree_root_id(self) -> int:
        return self.root_id or self.pk

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def planned_ahead(self) -> bool:
        """Its plan was written before it started (a fork's, its first steps copied from its
        source: runs.forks): it starts at its first step not done, with no model asked."""
        return self.origin == Origin.FORK

    @property
    def instruction(self) -> str:
        """What a person added for its steps when they forked it: every step's input says it."""
        return str(self.origin_options.get("instruction") or "")

    @property
    def not_replayable_because(self) -> str:
        """Why the run cannot be replayed, in a person's words; "" when it can (the one rule:
        runs.replays refuses, and the run page offers Replay, by it)."""
        if not self.recorded:
            return NOT_RECORDED
        if self.origin == Origin.FORK:
            # Its first steps were copied, not asked: there is nothing recorded to answer them.
            return (
                f"Run {self.pk} is a fork: its copied steps were never asked of a model; "
                "replay its source instead"
            )
        return ""

    @property
    def replayable(self) -> bool:
        return not self.not_replayable_because

    def can_transition_to(self, status: str) -> bool:
        return status in RUN_TRANSITIONS[self.status]

    def duration_seconds(self) -> float | None:
        if not self.started_at:
            return None
        end = self.finished_at or timezone.now()
        return (end - self.started_at).total_seconds()


class Plan(models.Model):
    """A version of the run's plan. A replan adds a version; older versions stay as history."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="plans")
    version = models.PositiveIntegerField()
    reason = models.TextField(
        blank=True, help_text="Why this version was made (empty for the first)."
    )
    raw = models.JSONField(default=dict, help_text="The validated plan as the model returned it.")
    thinking = models.TextField(blank=True, help_text="The model's reasoning while planning it.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "version"]
        constraints = [
            models.UniqueConstraint(fields=["run", "version"], name="plan_version_unique")
        ]

    def __str__(self) -> str:
        return f"Plan v{self.version} of run {self.run_id}"


StepStatus = _choices_of(states.StepStatus)


STEP_DONE_STATUSES = frozenset(
    {
        StepStatus.COMPLETED,
        StepStatus.FAILED,
        StepStatus.SKIPPED,
        StepStatus.TIMEOUT,
        StepStatus.CANCELLED,
    }
)


class StepManager(models.Manager["Step"]):
    """Steps without their model calls (`model_calls`), which only a replay reads: a page, a
    list or a worker loading a run's steps would otherwise read every call's request."""

    def get_queryset(self) -> models.QuerySet["Step"]:
        return super().get_queryset().defer("model_calls")


class Step(models.Model):
    plan = models.ForeignKey(Plan, on_delete=models.CASCADE, related_name="steps")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="steps")
    index = models.PositiveIntegerField()
    objective = models.TextField()
    tool_names = models.JSONField(default=list)
    reasoning = models.TextField(blank=True)
    depends_on = models.JSONField(default=list)
    status = models.CharField(max_length=10, choices=StepStatus.choices, default=StepStatus.PENDING)
    output = models.TextField(blank=True)
    error = models.TextField(blank=True)
    thinking = models.TextField(blank=True, help_text="The model's reasoning while executing it.")
    # While a call of this step waits for approval: the step's conversation up to that call and
    # the calls still to make, so the step resumes exactly there (engine.executor.Progress).
    progress = models.JSONField(null=True, blank=True)
    # Attempts after the first: a step interrupted by a crash runs again and counts it here.
    retry_count = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The step's model calls (issue 36): the frames of engine.exchanges.pack_calls, each with
    # its length before it, appended by the commits that wrote them (worker.commits; read by
    # runs.exchanges.model_calls). Written with the step's own row, not a row of their own: a
    # row cost a step more than everything else the recording does. Not loaded unless asked.
    model_calls = models.BinaryField(default=b"", editable=False)

    objects = StepManager()

    class Meta:
        # A step reached through another row (a tool call's) leaves them out too, so that no
        # step saved whole can write back calls it read before more were appended.
        base_manager_name = "objects"
        ordering = ["plan", "index"]
        constraints = [models.UniqueConstraint(fields=["plan", "index"], name="step_index_unique")]

    def __str__(self) -> str:
        return f"Step {self.index} of plan {self.plan_id}"

    @property
    def is_done(self) -> bool:
        return self.status in STEP_DONE_STATUSES

    def set_status(self, status: str) -> None:
        """The step's status (not saved), told to the board a worker decides this step's plan
        on, if it keeps one (engine.decide.StepBoard, worker.steps.board_of): every change of a
        step's status goes through here."""
        self.status = status
        board = self.__dict__.get("_board")
        if board is not None:
            board.set(self.index, status)


class ToolCallStatus(models.TextChoices):
    RUNNING = "running"
    WAITING_APPROVAL = "waiting_approval"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    DENIED = "denied"
    SKIPPED = "skipped"


class ToolCall(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="tool_calls")
    step = models.ForeignKey(Step, on_delete=models.CASCADE, related_name="tool_calls")
    attempt = models.PositiveIntegerField(
        default=0, help_text="The step's retry_count at the call."
    )
    tool = models.CharField(max_length=200)
    arguments = models.JSONField(default=dict)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    status = models.CharField(
        max_length=20, choices=ToolCallStatus.choices, default=ToolCallStatus.RUNNING
    )
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.tool} ({self.status})"


class RunEvent(models.Model):
    """Append-only log of a run; (run, seq) is gapless and ordered, so clients resume by seq."""

    # No index of its own: (run, seq)'s unique index serves every lookup by run, and every
    # event written would update both.
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events", db_index=False)
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=40)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="run_event_seq_unique")]

    def __str__(self) -> str:
        return f"{self.run_id}#{self.seq} {self.type}"
