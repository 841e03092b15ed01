"""The kinds of run as recipes (docs/ARCHITECTURE.md, "Kinds are recipes").

Every kind of run (task, chat answer, contract attempt, head node, child, micro agent) runs on
the one engine: the same worker loop, lease, fence, events, approvals, budgets and audit. Where
the kinds differ, the worker, the run's end and the pages ask the run's recipe, one object per
kind, and never test `run.kind`. `RECIPES` maps each kind to its recipe; it is filled once, in
AgentsAppConfig.ready, because each kind's recipe lives in its own package (the task's in
runs.task_recipe, the chat's in conversations, the contract's in contracts, the team's, the
child's and the micro agent's in orchestration), most of them above this one.

A recipe receives what it needs from the worker through `RecipeContext`, a narrow interface the
worker's executor provides; it never imports worker code, so layers still point down.

Where a run came from (a fork, a replay, a schedule) is its origin, not its kind: a new origin
is no new recipe.
"""

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from agents_app.engine.decide import Action
from agents_app.engine.llm import LLMProvider
from agents_app.models import ModelPhase, Plan, Run, Step


@dataclass
class RunRows:
    """What one decision is made from: the run, its latest plan and that plan's steps in
    index order."""

    run: Run
    plan: Plan | None
    steps: list[Step]


class RecipeContext(Protocol):
    """What a recipe may use of the worker performing its run's decision (worker.execution's
    RunExecutor provides it)."""

    provider: LLMProvider  # the executing phase's
    parked: bool  # set by a recipe that parked the run: its lease went with it

    def provider_for(self, phase: ModelPhase) -> LLMProvider:
        """The provider of one phase (planning also analyses, decomposes, evaluates a contract
        and condenses; executing does the steps; verifying judges)."""

    def lock(self, *, fenced: bool = False) -> AbstractContextManager[Any]:
        """One commit of the worker: yields the run's writer (runs.writer.RunWriter)."""

    def hooks(self, run: Run, step: Step | None = None, **options: Any) -> Any:
        """The engine's hooks (engine.hooks.Hooks) for one phase of the run."""

    def specs(self, run: Run) -> list[Any]:
        """The tools the run may use (tools_app.registry.ToolSpec)."""

    def plan(self, rows: RunRows, *, start: bool = False) -> None:
        """The worker's planner: the run's next plan (fast or asked), committed with its first
        step's start."""


class Recipe(Protocol):
    """What a kind of run decides. Every answer has the task's default in
    runs.task_recipe.TaskRecipe, which the other kinds extend."""

    kind: str
    # What pages and APIs need per kind: how people name it, which actions a person may take
    # on it, and the priority of its queued work (0: the default queue's order).
    label: str
    plural: str  # the kind's runs in a menu ("Chat answers")
    actions: frozenset[str]
    priority: int
    # Listed on the dashboard by default (a task, a team's head node); the others live where
    # they belong (a chat answer in its conversation, an attempt under its agent, a child
    # under its head node) and are listed on demand (the kind filter).
    listed: bool
    # Its steps are subtasks done by child runs: it heads a tree, its decisions delegate and
    # wait, and its children write its steps (so its worker never keeps them between commits).
    delegates: bool
    # Its step reads and writes a conversation's transcript; such a step's end is committed
    # unfenced, since appending to a transcript reads the run's row.
    transcript: bool
    # Its step ends after one round of tool calls (a contract's cycle).
    one_cycle: bool
    # A fast plan's verdict is derived from its one step (no model asked, `verify` with
    # fast): a step that completed is judged in the commit that ends it. (A kind that
    # delegates never ends a step of its own: its children do.)
    verdict_at_step_end: bool
    # A Stop lets the model's answer in flight finish (seed 002).
    finish_in_flight: bool
    # A failed verdict may ask for a new plan (up to AGENT_MAX_REPLANS).
    may_replan: bool
    # The files its task asks for must be in its workspace before it may succeed.
    checks_evidence: bool
    # The fast-path option (Task.fast_path) of the Task a run of this kind is started with.
    task_fast_path: bool | None

    def page_link(self, run: Run) -> tuple[str, str] | None:
        """Where its run page links to besides the run itself, as (what it is, its URL): its
        conversation, its agent (None: nowhere else; a team's lineage links children)."""

    def name_in_tree(self, run: Run) -> str:
        """How a tree's panel names the run."""

    def agent_name(self, run: Run) -> str:
        """How the messages of a tree's timeline name the run."""

    def replay_conversation(self, source: Run) -> Any:
        """The conversation a replay of `source` reads and appends to (models.Conversation: a
        copy, never the person's own), or None for a kind that reads none."""

    def profile_at_start(self) -> Any:
        """The agent profile (models.AgentProfile) a new run of this kind runs as, or None."""

    def plans_fast(self, rows: RunRows) -> bool:
        """Its next plan is made without the model (engine.fast)."""

    def plan(self, ctx: RecipeContext, rows: RunRows) -> None:
        """Make and commit the run's next plan."""

    def delegate(self, ctx: RecipeContext, action: Action, rows: RunRows) -> None:
        """Start the children of `action.delegate` (a delegating kind only)."""

    def wait(self, ctx: RecipeContext, rows: RunRows) -> None:
        """Park while a child works (a delegating kind only)."""

    def step_transcript(self, ctx: RecipeContext, run: Run, hooks: Any) -> list[dict] | None:
        """A step's input besides its objective: the conversation so far, or None."""

    def system_message(self, run: Run, conversation: Any) -> dict[str, Any]:
        """The first message of a transcript kind's input (its conversation's system
        message)."""

    def max_rounds(self, run: Run) -> int:
        """How many model turns a step may take."""

    def error_retries(self) -> int:
        """How many failed tool calls a step tolerates before it fails."""

    def record_step(self, w: Any, outcome: Any, error: str) -> None:
        """A step's outcome (engine.executor.StepOutcome) recorded besides its step's row, in
        the transaction that records the step (`error`: the step's error as stored)."""

    def keep_cut(self, w: Any, exc: Exception, reason: str) -> None:
        """What a step cut short by `exc` (a Stop, an interrupt, a failure) keeps, before the
        run's end."""

    def keep_parked(self, w: Any, progress: dict[str, Any], reason: str) -> None:
        """What a step parked at an approval (its `progress`, engine.executor.Progress) keeps
        when its run ends there (`reason`: why its calls still open got no result)."""

    def verify(self, ctx: RecipeContext, rows: RunRows, *, fast: bool) -> None:
        """Judge the run's work: it succeeds, fails, or goes on (a replan, another cycle)."""

    def fork_point(self, source: Run, plan: Plan, steps: list[Step], number: int) -> Any:
        """Where `source` stood after its step `number` (runs.forks.ForkPoint); DomainError
        CONFLICT when that cannot be rebuilt."""

    def fork_raw(self, raw: dict[str, Any], number: int, edited: list[str]) -> dict[str, Any]:
        """A fork's plan raw: the steps after `number` replaced by `edited` objectives."""

    def fork_along(self, source: Run, fork: Run, copies: Any, number: int) -> dict[str, Any]:
        """What else of `source` comes with its fork after step `number` (a head node's
        children), in the fork's transaction; returns fields of the fork to set."""

    def on_finish(self, w: Any) -> None:
        """In the transaction that ends the run (runs.lifecycle.finish), after it ended."""

    def on_transition(self, w: Any, before: str, after: str) -> None:
        """In the transaction of each change of the run's status (runs.writer), after it."""


# The one table where the kinds meet: RunKind -> its recipe. Filled in AgentsAppConfig.ready.
RECIPES: dict[str, Recipe] = {}


def recipe_for(kind: str) -> Recipe:
    """The recipe of a kind of run (a RunKind value)."""
    return RECIPES[kind]


def register(recipes: dict[str, Recipe]) -> None:
    RECIPES.update(recipes)


__all__ = ["RECIPES", "Recipe", "RecipeContext", "RunRows", "recipe_for", "register"]
