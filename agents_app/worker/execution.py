"""Executing a run from its rows: claim the lease, decide, perform, commit, repeat.

The database is the program counter (docs/ARCHITECTURE.md): nothing here survives between two
commits except the lease, so any worker can continue a run where another one stopped.
"""

import logging
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import DatabaseError, close_old_connections
from django.utils import timezone

from agents_app.approvals.parking import hold_on_call, park_on_call, park_on_plan
from agents_app.conversations.condense import context_window
from agents_app.core.audit import arguments_sha256
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.event_payloads import (
    ProgressUpdatePayload,
    StepCompletedPayload,
    StepFailedPayload,
    StepStartedPayload,
    TaskAnalysisPayload,
)
from agents_app.core.events import EventType
from agents_app.core.prepared import Prepared
from agents_app.core.publisher import PUBLISHER, in_background
from agents_app.core.secrecy import redact
from agents_app.core.watch import Watch
from agents_app.engine.analysis import analyze_task, bounded_offer, catalog_room, select_tools
from agents_app.engine.decide import (
    Action,
    ActionKind,
    RunState,
    next_action,
)
from agents_app.engine.executor import (
    CHILD_ANSWERED,
    AwaitApproval,
    AwaitChild,
    Resume,
    StepInput,
    execute_step,
)
from agents_app.engine.fast import fast_plan, fast_plan_raw, is_fast_plan
from agents_app.engine.hooks import StopRun, StreamPhase
from agents_app.engine.llm import LLMProvider
from agents_app.engine.plan_edits import edit_in
from agents_app.engine.planner import make_plan
from agents_app.engine.prompts import shown_earlier
from agents_app.models import (
    Approval,
    ApprovalStatus,
    ModelPhase,
    Origin,
    Plan,
    Run,
    RunStatus,
    Step,
    StepStatus,
)
from agents_app.orchestration.micro_tool import (
    micro_answer,
    micro_start,
    micro_wait,
    micro_working,
)
from agents_app.runs.admission import admit_waiting
from agents_app.runs.control import engaged_switch
from agents_app.runs.journal import WorkspaceJournal
from agents_app.runs.lease import Lease
from agents_app.runs.lifecycle import finish, new_plan, skip_step, workspace_for
from agents_app.runs.recipes import RunRows, recipe_for
from agents_app.runs.writer import LeaseLost, locked_run, read_again
from agents_app.worker.commits import PendingWrites, Turn, committing, read_control_flags
from agents_app.worker.hooks import DatabaseHooks, ToolCallHandle
from agents_app.worker.llm import as_itself, phase_providers, provider_for_run
from agents_app.worker.parallel import run_side_by_side
from agents_app.worker.replay import decide_as_recorded, replay_engine
from agents_app.worker.steps import (
    STEP_STARTED,
    STEP_WRITTEN_AT_ITS_END,
    board_of,
    replan_history,
    step_at,
    write_steps,
)
from tools_app.builtin import MICRO_AGENT_TOOL
from tools_app.process_registry import get_registry
from tools_app.registry import ToolRegistry, ToolSpec
from tools_app.selectors import configured_specs

logger = logging.getLogger(__name__)

# The actions after which the executor's rows are what the database holds: they change the
# run (read again by every commit) and the steps in memory, or (a plan) put the plan they
# wrote and its steps in place of the rows' own.
KEEPS_ROWS = frozenset(
    {
        ActionKind.START,
        ActionKind.PLAN,
        ActionKind.EXECUTE,
        ActionKind.SKIP,
        ActionKind.BEGIN_VERIFY,
    }
)


@dataclass(frozen=True)
class Outcome:
    """What became of one delivery: `busy` means another worker holds a live lease; `finished`
    also covers a run left paused by the kill switch (nothing more to do until its release)."""

    state: str  # finished | busy | lost
    retry_in: float = 0.0


# --- performing one decision ----------------------------------------------------------------


# A run's row with what it runs with, read at every run: compiled once (core.prepared).
RUN_TO_EXECUTE = Prepared(
    lambda pk: Run.objects.select_related("connection", "profile", "task").filter(pk=pk),
    samples=(-1,),
)
RUN_WITH_TASK = Prepared(lambda pk: Run.objects.select_related("task").filter(pk=pk), samples=(-1,))


class RunExecutor:
    """Performs a run's decisions, one after another, while its lease holds. Where the kinds
    of run differ it asks the run's recipe (runs.recipes), and is the recipe's context
    (runs.recipes.RecipeContext): its provider, its commits, its hooks, its tools, its
    planner."""

    def __init__(
        self,
        run_id: int,
        lease: Lease,
        provider: LLMProvider,
        registry: ToolRegistry,
        *,
        run: Run | None = None,
        phases: dict[str, LLMProvider] | None = None,
    ):
        self.run_id = run_id
        self.lease = lease
        self.provider = provider  # the executing phase's
        # Each phase's provider (models.ModelPhase); a phase not named: `provider`.
        self.phases = phases or {}
        self.registry = registry
        # Set once this worker parked the run: its lease went with it, so it stops here.
        self.parked = False
        # The commit a nested `lock` joins (a fast plan's verdict in its step's end).
        self.open: Any = None
        # While the lease holds nobody else writes the run's plan and steps, and every commit
        # reads the run's row again under its lock (the fence): what the last decision was
        # made from is kept (`rows`) while steps execute one after another, and read again
        # after anything else. What the hooks heard since the last commit waits in `pending`;
        # `watch` says when a cancel, a pause or the kill switch may have changed in between.
        self.run: Run | None = run  # as read after the lease was taken, with its task
        self.rows: RunRows | None = None
        self.pending = PendingWrites()
        # Every commit of this worker holds it; a parallel plan's steps share it (Turn).
        self.turn = Turn(self.pending)
        self.watch = Watch(run_id)
        self.journal: WorkspaceJournal | None = None
        self.halted: bool | None = None
        self.loaded = False  # `run` was read by load (else it was given, read with the lease)
        self._specs: list[ToolSpec] | None = None
        # In a thread running one step of a parallel plan (worker.parallel): that step's
        # branch, whose own pending writes and watch its commits and hooks use.
        self._branch = threading.local()
        # The step the last step's end started (`start_next`), until it executes, and the
        # rows it was decided from.
        self.started_next: Step | None = None
        self.rows_kept: RunRows | None = None
        # How each decision is performed. ActionKind.NONE has no entry: it means stop.
        self.performers: dict[ActionKind, Callable[[Action, RunRows], None]] = {
            ActionKind.CANCEL: self.perform_cancel,
            ActionKind.PAUSE: self.perform_pause,
            ActionKind.START: self.perform_start,
            ActionKind.PLAN: self.perform_plan,
            ActionKind.SKIP: self.perform_skip,
            ActionKind.EXECUTE: self.perform_execute,
            ActionKind.BEGIN_VERIFY: self.perform_begin_verify,
            ActionKind.VERIFY: self.perform_verify,
            ActionKind.DELEGATE: self.perform_delegate,
            ActionKind.WAIT: self.perform_wait,
            ActionKind.PARALLEL: self.perform_parallel,
        }

    @property
    def branch(self) -> Any:
        """This thread's branch of a parallel plan (worker.parallel.Branch), or None."""
        return getattr(self._branch, "value", None)

    def enter(self, branch: Any) -> None:
        """This thread runs one step of a parallel plan, as `branch`, until `leave`."""
        self._branch.value = branch

    def leave(self) -> None:
        self._branch.value = None

    def provider_for(self, phase: ModelPhase) -> LLMProvider:
        """The provider of one phase of the run (worker.llm.phase_providers)."""
        return self.phases.get(phase, self.provider)

    def load(self) -> RunRows:
        if self.run is None:
            self.run = RUN_WITH_TASK.get(self.run_id)
        elif self.loaded:
            read_again(self.run)
        self.loaded = True
        # A run gets its first plan in the commit that sets started_at (its move to
        # planning): one that never started has none to read, unless it was planned ahead
        # (a fork's).
        if self.run.started_at is None and not self.run.planned_ahead:
            return RunRows(self.run, None, [])
        plan = Plan.objects.filter(run=self.run).order_by("-version").first()
        steps = list(Step.objects.filter(plan=plan).order_by("index")) if plan else []
        return RunRows(self.run, plan, steps)

    def lock(self, *, fenced: bool = False) -> Any:
        """One commit of this worker (worker.hooks.committing): what its hooks heard first.
        Inside another (`open`), that one."""
        if self.open is not None:
            return nullcontext(self.open)
        # Every commit follows a decision, made from what load() read.
        assert self.run is not None
        if self.branch is not None:
            return self.branch.commit(self.run, self.lease, fenced=fenced)
        return committing(self.run, self.lease, self.pending, fenced=fenced, turn=self.turn)

    def hooks(self, run: Run, step: Step | None = None, **options: Any) -> DatabaseHooks:
        """The engine's hooks for one phase, sharing this worker's run, pending writes, watch
        and turn (in a step of a parallel plan, that step's own pending writes and watch:
        worker.parallel.Branch)."""
        branch = self.branch
        pending, watch = self.pending, self.watch
        if branch is not None:
            pending, watch = branch.pending, branch.watch
        if self.journal is None:
            self.journal = WorkspaceJournal(run)  # kept between calls (runs.journal)
        return DatabaseHooks(
            run,
            self.lease,
            step,
            pending=pending,
            watch=watch,
            turn=self.turn,
            journal=self.journal,
            **options,
        )

    def state_of(self, rows: RunRows, *, fresh: bool) -> RunState:
        """What `next_action` decides from. The kill switch and the run's cancel and pause
        flags are read again only when their counters moved (core.watch), or the first time.
        Right after a step's end started the next step, they were just looked at (the flags
        came back with that commit, `start_next` looked at the switch): a cancel since is
        seen at the step's first checkpoint, a pause at its end."""
        if self.started_next is not None:
            run_moved = switch_moved = False
        else:
            run_moved, switch_moved = self.watch.moved()
        if switch_moved or self.halted is None:
            self.halted = engaged_switch() is not None
        if run_moved and not fresh:
            read_control_flags(rows.run)
        return RunState(
            status=rows.run.status,
            cancel_requested=rows.run.cancel_requested,
            halted=self.halted,
            pause_requested=rows.run.pause_requested,
            steps=board_of(rows.steps),
            delegates=recipe_for(rows.run.kind).delegates,
            parallel=is_parallel(rows.plan),
        )

    def step_once(self) -> bool:
        """Decide and perform one action; False when there is nothing left to do."""
        rows, fresh = self.rows, self.rows is None
        if rows is None:
            rows, self.rows_kept = self.load(), None
        # Kept for the next decision only after an action that wrote nothing but the run's row
        # and the steps it holds (KEEPS_ROWS), and never for a run that delegates (its children
        # write its steps).
        self.rows = None
        flagged = rows.run.cancel_requested or rows.run.pause_requested or self.halted
        if self.started_next is not None and rows is self.rows_kept and not flagged:
            # The last step's end decided this one and started it (start_next); the flags
            # that came back with that commit say nothing else.
            action = Action(ActionKind.EXECUTE, step_index=self.started_next.index)
        else:
            action = next_action(self.state_of(rows, fresh=fresh))
        if action.kind == ActionKind.NONE:
            return False
        perform = self.performers[action.kind]
        try:
            try:
                perform(action, rows)
            except BaseException:
                # Whatever it started for the next decision was not committed.
                self.started_next = None
                raise
            keeps = action.kind in KEEPS_ROWS and not recipe_for(rows.run.kind).delegates
            if keeps and not self.parked:
                self.rows = self.rows_kept = rows
        except StopRun as stop:
            if stop.code == ErrorCode.LEASE_LOST:
                raise LeaseLost(str(stop)) from None
            with self.lock() as w:
                self.keep_cut(w, stop, str(stop) if stop.code != ErrorCode.CANCELLED else "")
                if stop.code == ErrorCode.CANCELLED:
                    finish(w, RunStatus.CANCELLED, ErrorCode.CANCELLED, "Cancelled by request")
                else:
                    finish(w, RunStatus.FAILED, stop.code, str(stop))
        except DomainError as exc:
            with self.lock() as w:
                self.keep_cut(w, exc, f"{exc.code}: {exc.message}")
                finish(w, RunStatus.FAILED, exc.code, exc.message, exc.details)
        except (LeaseLost, DatabaseError):
            raise  # the next delivery continues from the rows
        except Exception as exc:
            logger.exception("run %s: unexpected error in %s", self.run_id, action.kind)
            with self.lock() as w:
                finish(
                    w, RunStatus.FAILED, ErrorCode.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"
                )
        # Parked, the run is nobody's; ended, there is nothing to decide: no reading again.
        return not self.parked and not rows.run.is_terminal

    def keep_cut(self, w: Any, exc: Exception, reason: str) -> None:
        """A step cut short by `exc`: what its kind keeps of it (a chat answer's transcript),
        before the run's end."""
        recipe_for(w.run.kind).keep_cut(w, exc, reason)

    # --- the performers, one per ActionKind -------------------------------------------------

    def perform_cancel(self, action: Action, rows: RunRows) -> None:
        with self.lock() as w:
            self.unstart()
            finish(w, RunStatus.CANCELLED, ErrorCode.CANCELLED, "Cancelled by request")

    def perform_pause(self, action: Action, rows: RunRows) -> None:
        with self.lock() as w:
            self.unstart()
            w.set(resume_status=w.run.status)
            w.transition(
                RunStatus.PAUSED,
                reason="paused by request" if w.run.pause_requested else "kill switch engaged",
            )
        self.parked = True

    def perform_start(self, action: Action, rows: RunRows) -> None:
        # A plan written before the run started (a fork's): it runs from its first step not
        # done, in one commit, with no model asked.
        if rows.plan is not None:
            self.go_on(rows)
            return
        # A plan made without the model (the fast path: a chat's answer, a short task) is
        # written in the start's commit.
        if rows.plan is None and recipe_for(rows.run.kind).plans_fast(rows):
            self.plan(rows, start=True)
            return
        with self.lock() as w:
            w.transition(RunStatus.PLANNING)

    def perform_plan(self, action: Action, rows: RunRows) -> None:
        recipe_for(rows.run.kind).plan(self, rows)

    def perform_delegate(self, action: Action, rows: RunRows) -> None:
        recipe_for(rows.run.kind).delegate(self, action, rows)

    def perform_wait(self, action: Action, rows: RunRows) -> None:
        recipe_for(rows.run.kind).wait(self, rows)

    def perform_skip(self, action: Action, rows: RunRows) -> None:
        with self.lock() as w:
            for index in action.skip:
                skip_step(w, rows.steps[index], "a step it depends on did not complete")

    def perform_execute(self, action: Action, rows: RunRows) -> None:
        self.execute(rows, rows.steps[action.step_index], direct=is_fast_plan(rows.plan.raw))

    def perform_parallel(self, action: Action, rows: RunRows) -> None:
        run_side_by_side(self, action.parallel, rows)

    def perform_begin_verify(self, action: Action, rows: RunRows) -> None:
        with self.lock() as w:
            w.transition(RunStatus.VERIFYING)

    def perform_verify(self, action: Action, rows: RunRows) -> None:
        recipe_for(rows.run.kind).verify(self, rows, fast=is_fast_plan(rows.plan.raw))

    # --- the work behind plan, execute and verify -------------------------------------------

    def specs(self, run: Run) -> list[ToolSpec]:
        """The tools this run may use: every configured one its task allows (a profile's or a
        micro agent's list, never its excluded ones). Read once a delivery."""
        if self._specs is None:
            self._specs = [
                s for s in configured_specs(self.registry) if run.task.allows_tool(s.name)
            ]
        return self._specs

    def offered_tools(self, run: Run, hooks: DatabaseHooks) -> list[ToolSpec]:
        """Every tool, or with many tools only those the task analysis asks for; when the
        analysis fails, those that fit the model's context window."""
        tools = self.specs(run)
        if len(tools) < settings.AGENT_ANALYSIS_MIN_TOOLS:
            return tools
        try:
            analysis = analyze_task(
                provider=self.provider_for(ModelPhase.PLANNING),
                hooks=hooks,
                task=run.task.text,
                context=run.task.context,
                tools=tools,
                timeout=settings.AGENT_PLAN_TIMEOUT,
                max_tokens=settings.LLM_MAX_TOKENS_PLAN,
            )
        except DomainError as exc:
            if exc.code == ErrorCode.BUDGET_EXCEEDED:
                raise
            # An analysis that ran out of room (ANSWER_TOO_LONG) or failed otherwise does not
            # fail the run: the planner is offered the tools that fit the model's context.
            offered = bounded_offer(
                tools,
                task=run.task.text,
                room=catalog_room(
                    window=context_window(run.connection),
                    max_tokens=settings.LLM_MAX_TOKENS_PLAN,
                    task=run.task.text,
                    context=run.task.context,
                    max_steps=settings.AGENT_MAX_STEPS,
                ),
            )
            shown = "all" if len(offered) == len(tools) else [t.name for t in offered]
            with self.lock() as w:
                w.event(
                    EventType.TASK_ANALYSIS,
                    TaskAnalysisPayload(error=f"{exc.code}: {exc.message}", tools=shown),
                )
            return offered
        offered = select_tools(tools, analysis)
        with self.lock() as w:
            w.event(
                EventType.TASK_ANALYSIS,
                TaskAnalysisPayload(**analysis.model_dump(), tools=[t.name for t in offered]),
            )
        return offered

    def plan(self, rows: RunRows, *, start: bool = False) -> None:
        """The run's next plan, in one commit with its first step's start (and, with `start`,
        the run's). `rows` then hold the new plan and its steps."""
        run, previous = rows.run, rows.plan
        hooks = self.hooks(run)
        fast = recipe_for(run.kind).plans_fast(rows)
        if fast:
            tool_names = [t.name for t in self.specs(run)]
            output = fast_plan(task=run.task.text, tool_names=tool_names)
        else:
            output = make_plan(
                provider=self.provider_for(ModelPhase.PLANNING),
                hooks=hooks,
                task=run.task.text,
                context=run.task.context,
                tools=self.offered_tools(run, hooks),
                max_steps=settings.AGENT_MAX_STEPS,
                timeout=settings.AGENT_PLAN_TIMEOUT,
                history=replan_history(run, rows.steps) if previous else "",
                max_tokens=settings.LLM_MAX_TOKENS_PLAN,
            )
        # A run's first plan, unless it parks on it, needs nothing read first: it is written
        # fenced (the lease and the status it started from held by the last statement).
        with self.lock(fenced=start and not run.task.approve_plan) as w:
            if start:
                w.transition(RunStatus.PLANNING)
            # `parallel` is kept only when said: a plan of steps one after another reads as
            # it did before plans could say it.
            raw = (
                fast_plan_raw(output)
                if fast
                else output.model_dump(exclude=None if output.parallel else {"parallel"})
            )
            plan, steps = new_plan(
                w,
                previous=previous,
                raw=raw,
                thinking=hooks.streamed_reasoning(StreamPhase.ANALYSIS, StreamPhase.PLANNING),
                steps=[
                    (p.objective, p.tool_names, p.reasoning, p.depends_on) for p in output.steps
                ],
                shown={"steps": raw["steps"], **({"fast_path": True} if fast else {})},
            )
            if w.run.task.approve_plan:
                park_on_plan(w, plan)
                self.parked = True
                return
            w.transition(RunStatus.RUNNING)
            w.event(
                EventType.PROGRESS_UPDATE,
                ProgressUpdatePayload(
                    current_step=0,
                    total_steps=len(output.steps),
                    percent=0,
                    status=RunStatus.RUNNING,
                ),
            )
            # The first step starts with its plan, as each step's end starts the next.
            started = self.start_next(w, steps, parallel=is_parallel(plan))
            if started is not None:
                write_steps([started], STEP_STARTED)
        rows.plan, rows.steps = plan, steps

    def go_on(self, rows: RunRows) -> None:
        """Start a run whose plan was written before it started (`Run.planned_ahead`): queued
        to running in one commit, with its first step not done started in it (or, every step
        done, verifying), as a plan's commit starts its first step."""
        steps = rows.steps
        with self.lock() as w:
            w.transition(RunStatus.PLANNING)
            w.transition(RunStatus.RUNNING)
            done = board_of(steps).done
            w.event(
                EventType.PROGRESS_UPDATE,
                ProgressUpdatePayload(
                    current_step=done,
                    total_steps=len(steps),
                    percent=round(100 * done / len(steps)) if steps else 0,
                    status=RunStatus.RUNNING,
                ),
            )
            started = self.start_next(w, steps, parallel=is_parallel(rows.plan))
            if started is not None:
                write_steps([started], STEP_STARTED)

    def start_step(self, w: Any, step: Step, resume: Resume | None, *, save: bool = True) -> None:
        """Mark `step` running, with its step_started event, in `w`'s transaction (its row is
        written unless `save` is False: the caller writes it with others). A step found running
        was interrupted: it starts again as its next attempt."""
        interrupted = step.status == StepStatus.RUNNING and resume is None
        step.retry_count += int(interrupted)
        if interrupted and step.retry_count > settings.RUN_MAX_TAKEOVERS:
            # Seed 001's "crashed worker: resume elsewhere (3)": a step whose every try
            # takes its worker down ends the run (a team's parent then replans or fails).
            raise DomainError(
                ErrorCode.MAX_RETRIES_EXCEEDED,
                f"step {step.index} was interrupted {step.retry_count} times: its worker "
                f"stopped each time (RUN_MAX_TAKEOVERS={settings.RUN_MAX_TAKEOVERS})",
                {"step_index": step.index, "interruptions": step.retry_count},
            )
        step.set_status(StepStatus.RUNNING)
        step.started_at = timezone.now()
        # A crash after this commit restarts the step from scratch, like any interruption.
        step.progress = None
        if save:
            step.save(update_fields=STEP_STARTED)
        w.event(
            EventType.STEP_STARTED,
            StepStartedPayload(
                index=step.index,
                objective=step.objective,
                retry_count=step.retry_count,
                resumed_after_interruption=interrupted,
                resumed_after_approval=resume is not None,
            ),
        )

    def start_next(self, w: Any, steps: list[Step], *, parallel: bool) -> Step | None:
        """At a step's end (or a plan's), in its transaction: when the next decision will be
        to execute a step that has not started, start it now (one commit a step fewer); when
        it will be to begin verifying, the run is verifying from this commit on. The run's
        flags are the ones its last commit read or returned; the kill switch is looked at
        too. Should the decision be otherwise after all (a pause, a cancel or the kill switch
        in between), the step is put back (`unstart`) in that decision's commit; verifying
        needs no putting back (a pause or a cancel stops a verifying run as it would have
        stopped the run a moment earlier)."""
        if self.watch.switch_moved():
            self.halted = engaged_switch() is not None
        run = w.run
        state = RunState(
            status=run.status,
            cancel_requested=run.cancel_requested,
            halted=bool(self.halted),
            pause_requested=run.pause_requested,
            steps=board_of(steps),
            delegates=recipe_for(run.kind).delegates,
            parallel=parallel,
        )
        action = next_action(state)
        if action.kind == ActionKind.BEGIN_VERIFY:
            w.transition(RunStatus.VERIFYING)
        if action.kind != ActionKind.EXECUTE:
            return None
        step = steps[action.step_index]
        if step.status != StepStatus.PENDING or step.progress:
            return None  # begun elsewhere (a takeover's, an approval's): executed, not started
        self.start_step(w, step, None, save=False)
        self.started_next = step
        return step

    def unstart(self) -> None:
        """Put back the step `start_next` started, in the caller's transaction: it never ran."""
        step, self.started_next = self.started_next, None
        if step is not None:
            step.set_status(StepStatus.PENDING)
            step.started_at = None
            step.save(update_fields=["status", "started_at"])

    def execute(self, rows: RunRows, step: Step, *, direct: bool) -> None:
        run, steps = rows.run, rows.steps
        resume = None
        if self.started_next is step:
            self.started_next = None  # started by the last step's end
        else:
            if step.progress and "child_id" in step.progress and self.waits_for_child(step):
                return  # its micro agent works still
            if step.progress and "approval_id" in step.progress and self.skipped(step):
                return
            resume = self.decided(step) if step.progress else None
            with self.lock() as w:
                self.start_step(w, step, resume)
        workspace = workspace_for(run)
        recipe = recipe_for(run.kind)
        hooks = self.hooks(
            run, step, specs={spec.name: spec for spec in self.specs(run)}, workspace=workspace
        )
        if resume is not None and resume.decision != CHILD_ANSWERED:
            hooks.let_through[resume.handle.call_id] = "person"
        # A step of a parallel plan is shown only the steps it needs: the others may be
        # running beside it.
        parallel = is_parallel(rows.plan)
        shown_indices = (
            sorted(step.depends_on) if parallel else shown_earlier(step.index, step.depends_on)
        )
        shown = [step_at(steps, i) for i in shown_indices]
        # A plan a person edited is the task as they reshaped it: its steps are told that task.
        edit = edit_in(rows.plan.version, rows.plan.raw) if rows.plan is not None else None
        earlier = [(s.index, s.objective, s.status, s.output or s.error) for s in shown]
        try:
            outcome = execute_step(
                provider=self.provider,
                registry=self.registry,
                hooks=hooks,
                task=edit.task if edit is not None else run.task.text,
                context=run.task.context,
                step=StepInput(
                    index=step.index,
                    total=len(steps),
                    objective=step.objective,
                    reasoning=step.reasoning,
                    tool_names=list(step.tool_names),
                    earlier=earlier,
                    unshown=step.index - len(earlier),
                    direct=direct,
                    transcript=recipe.step_transcript(self, run, hooks),
                    one_cycle=recipe.one_cycle,
                    instruction=run.instruction,
                ),
                workspace=workspace,
                run_id=run.pk,
                timeout=settings.AGENT_STEP_TIMEOUT,
                max_rounds=recipe.max_rounds(run),
                resume=resume,
                max_tokens=settings.LLM_MAX_TOKENS_STEP,
                error_retries=recipe.error_retries(),
            )
        except AwaitApproval as wait:
            branch = self.branch
            with self.lock() as w:
                thinking = "\n\n".join(t for t in wait.progress["thoughts"] if t)
                if branch is not None:
                    # Only this step waits; the run parks once none of its steps can run.
                    hold_on_call(w, step, wait, thinking)
                    return
                park_on_call(w, step, wait, thinking)
            self.parked = True
            return
        except AwaitChild as wait:
            # A micro agent answers the call (orchestration.micro_tool): the run parks while
            # it works, or, refused, goes on with the reason as the call's answer. In a step of
            # a parallel plan, once its siblings ended (worker.parallel).
            branch = self.branch
            if branch is not None:
                branch.child = (step, wait)
                return
            with self.lock() as w:
                self.parked = micro_start(self, w, step, wait)
            return
        finally:
            hooks.flush_tokens()
        # A fast plan's one step that completed gets its verdict in the commit that ends it
        # (its kind derives it from the step: no model asked), one transaction, not two; that
        # commit reads the run's row first, as a verdict's does. So does a chat's answer, which
        # joins its transcript.
        judged = (
            direct
            and recipe.verdict_at_step_end
            and len(steps) == 1
            and outcome.status == StepStatus.COMPLETED
        )
        with self.lock(fenced=not (recipe.transcript or judged)) as w:
            step.set_status(outcome.status)
            step.output = outcome.output
            step.error = (
                redact(f"{outcome.error_code}: {outcome.error}") if outcome.error_code else ""
            )
            step.thinking = outcome.thinking
            step.finished_at = timezone.now()
            recipe.record_step(w, outcome, step.error)
            if outcome.status == StepStatus.COMPLETED:
                w.event(
                    EventType.STEP_COMPLETED,
                    StepCompletedPayload(
                        index=step.index, output=step.output, thinking=step.thinking
                    ),
                )
            else:
                w.event(
                    EventType.STEP_FAILED,
                    StepFailedPayload(
                        index=step.index,
                        status=outcome.status,
                        error_code=outcome.error_code,
                        error=outcome.error,
                        thinking=step.thinking,
                    ),
                )
            if outcome.finished_task:
                w.set(final_response=outcome.output)
                for later in steps:
                    if later.index > step.index and later.status == StepStatus.PENDING:
                        skip_step(w, later, "finish_task was called")
            done = board_of(steps).done
            w.event(
                EventType.PROGRESS_UPDATE,
                ProgressUpdatePayload(
                    current_step=step.index + 1,
                    total_steps=len(steps),
                    percent=round(100 * done / len(steps)),
                    status=RunStatus.RUNNING,
                ),
            )
            # A step of a parallel plan starts none: its fan decides what runs next.
            started = None if parallel else self.start_next(w, steps, parallel=False)
            # The step's outcome and the next step's start in one statement.
            write_steps(
                [step] if started is None else [step, started],
                STEP_WRITTEN_AT_ITS_END,
                w.step_calls,
            )
            if judged and w.run.status == RunStatus.VERIFYING:
                self.open = w
                try:
                    recipe.verify(self, rows, fast=True)
                finally:
                    self.open = None

    def waits_for_child(self, step: Step) -> bool:
        """Whether the micro agent `step` called for works still (the run was paused and
        resumed meanwhile, or a decision on a sibling queued it): the run parks again, at once
        or, in a step of a parallel plan, once no sibling runs (worker.parallel)."""
        branch = self.branch
        if branch is not None:
            if not micro_working(step.progress):
                return False
            branch.child = (step, None)
            return True
        with self.lock() as w:
            self.parked = micro_wait(w, step.progress)
        return self.parked

    def skipped(self, step: Step) -> bool:
        """Whether a person skipped the call `step` stopped at while the run did not wait for
        them (its siblings of a parallel plan ran, or it was paused): then the step is
        skipped now, as approvals.decisions skips one when the run waited."""
        approval = Approval.objects.filter(pk=step.progress["approval_id"]).only("status").first()
        if approval is None or approval.status != ApprovalStatus.SKIPPED:
            return False
        with self.lock() as w:
            step.progress = None
            step.save(update_fields=["progress"])
            skip_step(w, step, "skipped at an approval")
        return True

    def decided(self, step: Step) -> Resume | None:
        """How to continue a step parked on an approval, once a person decided it, or on a
        micro agent, once it ended (None: the approval is gone or undecided, or the child
        works still, and the step starts again like an interrupted one)."""
        if "child_call_id" in step.progress:
            return self.answered_by_child(step)
        approval = Approval.objects.filter(pk=step.progress.get("approval_id")).first()
        if approval is None or approval.tool_call_id is None:
            return None
        if approval.status == ApprovalStatus.APPROVED:
            decision, arguments = "approve", approval.arguments
        elif approval.status == ApprovalStatus.MODIFIED:
            decision, arguments = "modify", approval.decision_arguments or {}
        elif approval.status == ApprovalStatus.DENIED:
            decision, arguments = "deny", approval.arguments
        else:
            return None
        handle = ToolCallHandle(
            approval.tool_call_id, time.monotonic(), approval.tool, arguments_sha256(arguments)
        )
        note = "It timed out waiting for a decision." if approval.expired else ""
        return Resume(step.progress, decision, arguments, handle, note)

    def answered_by_child(self, step: Step) -> Resume | None:
        progress = step.progress
        result = micro_answer(progress)
        if result is None:
            return None
        arguments = progress["child_arguments"]
        handle = ToolCallHandle(
            progress["child_call_id"],
            time.monotonic(),
            MICRO_AGENT_TOOL,
            arguments_sha256(arguments),
        )
        return Resume(progress, CHILD_ANSWERED, arguments, handle, result=result)


def is_parallel(plan: Plan | None) -> bool:
    """Whether `plan` said its steps' depends_on are complete (engine.decide.RunState)."""
    return plan is not None and bool(plan.raw.get("parallel"))


# --- the loop -------------------------------------------------------------------------------


def admit_waiting_quietly(owner_id: int) -> None:
    """runs.admission.admit_waiting, after a delivery: a failure (a database blip) is logged,
    and the sweep lets those runs go instead."""
    try:
        admitted = admit_waiting(owner_id)
    except DatabaseError:
        logger.warning("could not let user %s's waiting runs go", owner_id, exc_info=True)
        return
    if admitted:
        logger.info("let user %s's waiting runs go: %s", owner_id, admitted)


def execute_run(
    run_id: int,
    *,
    provider: LLMProvider | None = None,
    registry: ToolRegistry | None = None,
) -> Outcome:
    """Execute the run until it finishes, or return at once when another worker holds it.
    Idempotent: a second delivery continues from the first step not completed."""
    close_old_connections()
    lease = Lease.claim(run_id, settings.RUN_LEASE_SECONDS)
    if lease is None:
        run = Run.objects.filter(pk=run_id).only("status", "lease_expires_at").first()
        if run is None or run.is_terminal:
            return Outcome("finished")
        remaining = (
            (run.lease_expires_at - timezone.now()).total_seconds() if run.lease_expires_at else 0
        )
        return Outcome("busy", retry_in=max(1.0, remaining))
    lease.start()
    handed_back = parked_replay = False
    owner_id = None
    try:
        # Read once, after the lease was taken: the provider, the persona and the first
        # decision are made from it.
        run = RUN_TO_EXECUTE.get(run_id)
        owner_id = run.owner_id
        phases = None
        # A replay's recorded answers answer every phase (replay_engine): no model is asked.
        replay = run.origin == Origin.REPLAY
        if provider is None and not replay:
            try:
                provider = as_itself(run, provider_for_run(run))
                phases = phase_providers(run, provider)
            except DomainError as exc:
                with locked_run(run_id, lease.token) as w:
                    finish(w, RunStatus.FAILED, exc.code, exc.message, exc.details)
                return Outcome("finished")
        elif provider is not None:
            provider = as_itself(run, provider)
        if registry is None:
            registry = get_registry()
            # This process's MCP sessions: started once, after any fork, then kept open.
            from tools_app.mcp.client import ensure_pool

            ensure_pool(registry, wait=settings.MCP_STARTUP_WAIT)
        if replay:
            provider, registry = replay_engine(run, lease, registry)
        executor = RunExecutor(run_id, lease, provider, registry, run=run, phases=phases)
        # Each commit's events are sent while the next step runs (core.publisher); all of
        # them are sent before this delivery ends.
        with in_background():
            while executor.step_once():
                pass
        # Its end or its parking committed the lease's release with it.
        handed_back = executor.run is not None and not executor.run.lease_owner
        # A replay parked at an approval: decided as its source's was, once the lease is let
        # go (the decision queues the run again, for any worker).
        parked_replay = replay and executor.parked
        return Outcome("finished")
    except LeaseLost:
        logger.warning("run %s: lease lost to another worker; stopping", run_id)
        return Outcome("lost")
    finally:
        lease.release(handed_back=handed_back)
        try:
            if parked_replay:
                decide_as_recorded(run_id)
        finally:
            PUBLISHER.flush()
            if owner_id is not None:
                # The run let its turn go (it ended or parked) or kept it (the lease was
                # lost): either way the person's runs waiting their turn may go now.
                admit_waiting_quietly(owner_id)
