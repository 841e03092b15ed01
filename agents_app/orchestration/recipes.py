"""The recipes of a team's runs (runs.recipes): the head node (its plan is the task split into
subtasks, its steps delegated to children, its verdict the children's envelopes put together),
a child (a subtask done by one agent profile, handing back its envelope) and a micro agent (a
child with a temporary persona, one open-ended step bounded by its max_steps)."""

from typing import Any

from django.conf import settings

from agents_app.engine.decide import Action
from agents_app.models import AgentProfile, AgentRole, Run, RunKind
from agents_app.orchestration.children import HEAD_NODE, on_run_finished, on_run_transition
from agents_app.orchestration.forks import copy_children, team_fork_point, team_fork_raw
from agents_app.orchestration.head_node import delegate, plan_team, verify_team, wait
from agents_app.runs.recipes import RecipeContext, RunRows
from agents_app.runs.task_recipe import TaskRecipe


def head_node_profile() -> Any:
    """The orchestrator profile a team's head node runs as (its persona, model and budget),
    or None when staff removed every one."""
    return AgentProfile.objects.filter(role=AgentRole.ORCHESTRATOR).order_by("name").first()


class TeamRecipe(TaskRecipe):
    kind: str = RunKind.TEAM
    label = HEAD_NODE
    plural = "Team runs"
    delegates = True

    def name_in_tree(self, run: Run) -> str:
        return self.label

    def agent_name(self, run: Run) -> str:
        if run.profile_id is not None and run.profile is not None:
            return f"{run.profile.name} (head)"
        return HEAD_NODE

    def profile_at_start(self) -> Any:
        return head_node_profile()

    def plans_fast(self, rows: RunRows) -> bool:
        return False  # the split into subtasks is always the model's

    def plan(self, ctx: RecipeContext, rows: RunRows) -> None:
        plan_team(ctx, rows.run, rows.plan, rows.steps)

    def delegate(self, ctx: RecipeContext, action: Action, rows: RunRows) -> None:
        delegate(ctx, action, rows)

    def wait(self, ctx: RecipeContext, rows: RunRows) -> None:
        wait(ctx, rows)

    def verify(self, ctx: RecipeContext, rows: RunRows, *, fast: bool) -> None:
        verify_team(ctx, rows.run, rows.steps)

    def fork_point(self, source: Run, plan: Any, steps: list[Any], number: int) -> Any:
        return team_fork_point(source, plan, steps, number)

    def fork_raw(self, raw: dict[str, Any], number: int, edited: list[str]) -> dict[str, Any]:
        return team_fork_raw(raw, number, edited)

    def fork_along(self, source: Run, fork: Run, copies: Any, number: int) -> dict[str, Any]:
        return copy_children(source, fork, copies, number)

    def on_finish(self, w: Any) -> None:
        # A head node runs as the orchestrator's profile, but frees no place of a profile.
        on_run_finished(w, frees_a_profile=False)


class ChildRecipe(TaskRecipe):
    kind: str = RunKind.CHILD
    label = "child"
    plural = "Children (subtasks)"
    # Under its head node; its head node restarts a subtask, not a person.
    listed = False
    actions = frozenset({"cancel", "pause", "resume"})

    def on_finish(self, w: Any) -> None:
        on_run_finished(w, frees_a_profile=True)

    def on_transition(self, w: Any, before: str, after: str) -> None:
        on_run_transition(w, before, after)


class MicroRecipe(ChildRecipe):
    kind: str = RunKind.MICRO
    label = "micro agent"
    plural = "Micro agents"
    actions = frozenset({"cancel"})
    # Its max_steps bound it, and its parent decides what follows.
    may_replan = False
    # One open-ended step, ended by finish_task.
    task_fast_path = True

    def name_in_tree(self, run: Run) -> str:
        return self.label

    def agent_name(self, run: Run) -> str:
        return f"micro agent #{run.pk}"

    def max_rounds(self, run: Run) -> int:
        return int(run.task.context.get("max_steps") or settings.AGENT_MAX_TOOL_ROUNDS)


TEAM = TeamRecipe()
CHILD = ChildRecipe()
MICRO = MicroRecipe()
