"""The task's recipe (runs.recipes): plan (fast or asked), execute the steps, verify, replan.
Every other kind extends it and changes only what differs.

Named so it is not confused with agents_app/tasks.py (the Celery tasks)."""

from typing import Any

from django.conf import settings

from agents_app.core.errors import ErrorCode
from agents_app.core.event_payloads import ReplannedPayload, VerificationPayload
from agents_app.core.events import EventType
from agents_app.engine.decide import Action
from agents_app.engine.fast import fast_verdict, takes_fast_path
from agents_app.engine.hooks import StreamPhase
from agents_app.engine.verifier import verify as judge
from agents_app.models import ModelPhase, Run, RunKind, RunStatus
from agents_app.runs.evidence import call_records, evidence_problem, plan_edit, root_cause
from agents_app.runs.forks.checks import own_fork_point
from agents_app.runs.lifecycle import children_end_with, finish
from agents_app.runs.recipes import RecipeContext, RunRows

# What a person may do to a run on its page, REST and MCP (a kind offers those that make
# sense for it: a chat answer is stopped, not restarted; the person writes again). A run that
# offers "fork" may be forked after one of its completed steps (runs.forks).
RUN_ACTIONS = frozenset({"cancel", "pause", "resume", "restart", "fork", "replay"})


class TaskRecipe:
    kind: str = RunKind.TASK
    label = "task"
    plural = "Tasks"
    actions = RUN_ACTIONS
    priority = 0
    listed = True
    delegates = False
    transcript = False
    one_cycle = False
    verdict_at_step_end = True
    finish_in_flight = False
    # A failed verdict may ask for a new plan (up to AGENT_MAX_REPLANS).
    may_replan = True
    # The files its task asks for must be in its workspace before it may succeed.
    checks_evidence = True
    # The fast-path option of the Task a run of this kind is started with (a child's: None,
    # decided by its text).
    task_fast_path: bool | None = None

    # --- what pages and APIs need ---------------------------------------------------------

    def page_link(self, run: Run) -> tuple[str, str] | None:
        return None

    def name_in_tree(self, run: Run) -> str:
        return run.profile.name if run.profile is not None else str(run.kind)

    def agent_name(self, run: Run) -> str:
        if run.profile_id is not None and run.profile is not None:
            return run.profile.name
        return f"run #{run.pk}"

    def replay_conversation(self, source: Run) -> Any:
        return None  # it reads no conversation

    def profile_at_start(self) -> Any:
        return None

    # --- planning ---------------------------------------------------------------------------

    def plans_fast(self, rows: RunRows) -> bool:
        """The fast path (engine/fast.py) plans without the model, on the first plan only: a
        replan after a direct attempt asks the planner, with that attempt as history."""
        task = rows.run.task
        return rows.plan is None and takes_fast_path(
            text=task.text, option=task.fast_path, max_chars=settings.AGENT_FAST_PATH_MAX_CHARS
        )

    def plan(self, ctx: RecipeContext, rows: RunRows) -> None:
        ctx.plan(rows)

    def delegate(self, ctx: RecipeContext, action: Action, rows: RunRows) -> None:
        raise TypeError(f"a run of kind {self.kind} does not delegate")

    def wait(self, ctx: RecipeContext, rows: RunRows) -> None:
        raise TypeError(f"a run of kind {self.kind} has no children to wait for")

    # --- a step -----------------------------------------------------------------------------

    def step_transcript(self, ctx: RecipeContext, run: Run, hooks: Any) -> list[dict] | None:
        return None

    def system_message(self, run: Run, conversation: Any) -> dict[str, Any]:
        raise TypeError(f"a run of kind {self.kind} has no conversation")

    def max_rounds(self, run: Run) -> int:
        return settings.AGENT_MAX_TOOL_ROUNDS

    def error_retries(self) -> int:
        return settings.AGENT_TOOL_ERROR_RETRIES

    def record_step(self, w: Any, outcome: Any, error: str) -> None:
        """A task's step is its row: nothing else to record."""

    def keep_cut(self, w: Any, exc: Exception, reason: str) -> None:
        """A task's step cut short keeps what its rows hold (its tool calls): nothing more."""

    def keep_parked(self, w: Any, progress: dict[str, Any], reason: str) -> None:
        """A task's parked step keeps what its rows hold (its tool calls): nothing more."""

    # --- the verdict ------------------------------------------------------------------------

    def verify(self, ctx: RecipeContext, rows: RunRows, *, fast: bool) -> None:
        """The verifier's verdict (or the fast path's, derived from its one step): the one
        place a run may succeed, its evidence checked."""
        run, plan, steps = rows.run, rows.plan, rows.steps
        can_replan = self.may_replan and run.replans < settings.AGENT_MAX_REPLANS
        # A fast-path plan's verdict is derived from its one step, not asked; it ends at the
        # same success point, replan or failure below as the verifier's.
        derived = fast_verdict(steps[0], can_replan=can_replan) if fast else None
        hooks = ctx.hooks(run)
        calls: list = []
        # A plan a person edited is the task as they reshaped it: judged and checked as such.
        edit = plan_edit(run)
        if derived:
            verdict = derived.verdict
        else:
            calls = call_records(run, steps)
            verdict = judge(
                provider=ctx.provider_for(ModelPhase.VERIFYING),
                hooks=hooks,
                task=run.task.text,
                context=run.task.context,
                steps=[(s.index, s.objective, s.status, s.output or s.error) for s in steps],
                can_replan=can_replan,
                timeout=settings.AGENT_VERIFY_TIMEOUT,
                max_tokens=settings.LLM_MAX_TOKENS_VERIFY,
                calls=calls,
                edit=edit,
            )
        with ctx.lock() as w:
            thinking = hooks.streamed_reasoning(StreamPhase.VERIFICATION)
            w.event(
                EventType.VERIFICATION,
                VerificationPayload(
                    **verdict.model_dump(), **({"thinking": thinking} if thinking else {})
                ),
            )
            last_output = next((s.output for s in reversed(steps) if s.output), "")
            answer = verdict.response or w.run.final_response or last_output
            # The one place a run may succeed: the evidence is checked here, whoever judged.
            problem = (
                evidence_problem(
                    run,
                    answer=answer,
                    # A run that made no call has none to read (counted as each was made).
                    calls=calls or (call_records(run, steps) if w.run.tool_calls_made else []),
                    verifier=verdict.reasoning,
                    edit=edit,
                )
                if verdict.task_complete and self.checks_evidence
                else None
            )
            held = (plan, steps)  # this worker's: nobody else writes them while it holds the run
            if problem is not None:
                finish(
                    w, RunStatus.FAILED, problem.code, problem.message, problem.details, held=held
                )
            elif verdict.task_complete:
                w.set(final_response=answer)
                finish(w, RunStatus.SUCCEEDED, held=held)
            elif verdict.should_replan and can_replan:
                w.set(replans=w.run.replans + 1, replan_reason=verdict.reasoning)
                w.event(
                    EventType.REPLANNED,
                    ReplannedPayload(replans=w.run.replans, reason=verdict.reasoning),
                )
                w.transition(RunStatus.PLANNING)
            elif derived:
                finish(w, RunStatus.FAILED, derived.error_code, verdict.reasoning, {}, held=held)
            else:
                # The headline names the root cause (a failed step or call), the verifier's
                # judgement after it; the model's own words go into the details.
                cause = root_cause(steps, calls)
                finish(
                    w,
                    RunStatus.FAILED,
                    ErrorCode.VERIFICATION_FAILED,
                    f"{cause.rstrip('.')} — the verifier judged the task incomplete"
                    if cause
                    else "The verifier judged the task incomplete",
                    {"verifier": verdict.reasoning, **({"cause": cause} if cause else {})},
                    held=held,
                    cause=cause,
                )

    # --- a fork of it (runs.forks) ------------------------------------------------------------

    def fork_point(self, source: Run, plan: Any, steps: list[Any], number: int) -> Any:
        """Where `source` stood after its step `number` of `plan` (`steps`, in index order): a
        runs.forks.ForkPoint, from its own journal. Raises DomainError CONFLICT when that
        cannot be rebuilt."""
        return own_fork_point(source, plan, steps, number)

    def fork_raw(self, raw: dict[str, Any], number: int, edited: list[str]) -> dict[str, Any]:
        """A plan's raw with its steps after `number` replaced by `edited` objectives, which
        name no dependencies (so no longer `parallel`, nor a fast plan)."""
        raw = {k: v for k, v in raw.items() if k not in ("parallel", "fast_path")}
        kept = list(raw.get("steps") or [])[:number]
        raw["steps"] = kept + [
            {"objective": o, "tool_names": [], "reasoning": "", "depends_on": []} for o in edited
        ]
        return raw

    def fork_along(self, source: Run, fork: Run, copies: Any, number: int) -> dict[str, Any]:
        """In the fork's transaction, once its plan was copied (`copies`: runs.forks.Copies):
        what else comes with it, and the fork's fields it sets. A task: nothing."""
        return {}

    # --- its end and its changes ------------------------------------------------------------

    def on_finish(self, w: Any) -> None:
        """A task's end: a micro agent one of its steps started ends with it."""
        children_end_with(w)

    def on_transition(self, w: Any, before: str, after: str) -> None:
        """Nobody follows a task's status but its own pages (its events)."""


TASK = TaskRecipe()
