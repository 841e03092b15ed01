"""Mutation run over the durability core: does some test notice when the code is broken?

    uv run python bench/mutation.py                      # the six core modules
    uv run python bench/mutation.py --extra              # and the executor, hooks, decisions, delivery, recipes
    uv run python bench/mutation.py lease writer         # only these
    uv run python bench/mutation.py --ref HEAD~3 --sample 20 --jobs 2 execution

Cosmic Ray (a maintained mutation tool) changes one thing at a time in a copy of the committed
tree (`git archive REF` under /tmp/agentdesk-mutation/, never this checkout, which others may be
testing): a comparison flipped, a condition negated, a statement deleted, a constant changed. Each
mutant runs the module's own test subset (MODULES below, in one process against SQLite, no
migrations); a failing run (or one past the timeout) kills it. Prints a table per module
(mutants, killed, timeouts, survived, score; timeouts count as killed) and every survivor's diff.
Too slow for .ci/run (about 10 s a mutant): run it before closing an issue that touches these
modules, and quote its table.
"""

import argparse
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import cosmic_ray.commands
import cosmic_ray.plugins
from cosmic_ray.config import ConfigDict
from cosmic_ray.operators import (
    binary_operator_replacement,
    boolean_replacer,
    break_continue,
    comparison_operator_replacement,
    exception_replacer,
    number_replacer,
    remove_decorator,
    zero_iteration_for_loop,
)
from cosmic_ray.operators.operator import Example, Operator
from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import TestOutcome
from parso.python.tree import Keyword

ROOT = Path(__file__).resolve().parent.parent
WORK = Path(tempfile.gettempdir()) / "agentdesk-mutation"


@dataclass(frozen=True)
class Module:
    path: str
    tests: tuple[str, ...]
    core: bool = True
    # A mutant that makes a loop endless is killed by this timeout (the subsets take 3-20 s).
    timeout: float = 90.0
    # Equivalent mutants, left out of the run: (operator, the mutated line as written, why no
    # test can tell it from the code).
    equivalent: tuple[tuple[str, str, str], ...] = ()
    # Equivalent mutants only one of an operator's changes of a line makes (a constant's +1
    # or -1): (the mutated line as the survivor's diff shows it, why), counted as equivalent
    # when they survive.
    equivalent_results: tuple[tuple[str, str], ...] = ()


def _keyword_marker(signature: str) -> tuple[str, str, str]:
    return (
        "ReplaceBinaryOperator_Mul_Div",
        signature,
        "the `*` before keyword-only parameters turned `/`: every caller passes the arguments"
        " before it by position and those after it by keyword, which both signatures accept",
    )


def _protocol(signature: str) -> tuple[str, str, str]:
    return (
        "",  # any operator
        signature,
        "a method of a typing.Protocol: nothing calls it, so no change to its signature runs",
    )


# A run's profile is None exactly when its profile_id is (SET_NULL clears the column), so
# `and` and `or` between the two tests answer alike.
PROFILE_OF = (
    "ReplaceAndWithOr",
    "if run.profile_id is not None and run.profile is not None:",
    "run.profile is None exactly when run.profile_id is",
)
RETURN_NONE = (
    "DeleteStatement",
    "return None",
    "a function without its `return None` returns None",
)
VERIFY = "def verify(self, ctx: RecipeContext, rows: RunRows, *, fast: bool) -> None:"

MODULES = {
    "decide": Module(
        "agents_app/engine/decide.py",
        (
            "tests/engine/test_decide.py",
            "tests/engine/test_decide_more.py",
            "tests/engine/test_step_board.py",  # the incremental StepBoard
        ),
        equivalent=(
            (
                "DeleteStatement",
                "return Action(ActionKind.BEGIN_VERIFY)  # every step done",
                "a head node with every step done, without this return, goes on to the loop"
                " over the open steps, which finds none and returns BEGIN_VERIFY too",
            ),
            (
                "ReplaceComparisonOperator_Lt_LtE",
                "if status not in DONE and position < self._open:",
                "at position == _open, `<=` sets _open to the value it has",
            ),
        ),
    ),
    "files": Module(
        "tools_app/builtin/files.py",
        (
            "tests/tools/builtin/test_builtin_tools.py",
            "tests/tools/builtin/test_file_confinement.py",
            "tests/tools/builtin/test_file_errors.py",  # what the file system refuses
        ),
        equivalent=(
            _keyword_marker("def __init__(self, *, max_bytes: int) -> None:"),
            _keyword_marker("def __init__(self, *, max_entries: int = LIST_MAX_ENTRIES) -> None:"),
            (
                "ReplaceTrueWithFalse",
                "return context.workspace.resolve(strict=True)",
                "the mkdir on the line before made the workspace or raised: it exists, and"
                " strict only decides what resolving a missing path does",
            ),
        ),
    ),
    "lease": Module(
        "agents_app/runs/lease.py",
        ("tests/runs/test_lease.py", "tests/core/audit/test_agent_actions.py"),
        equivalent=(
            _keyword_marker("def release(self, *, handed_back: bool = False) -> None:"),
            (
                "",  # any operator
                "self.due = time.monotonic() + seconds / 3",
                "a new Lease's first `due`: `start` sets it again before the renewer sees the"
                " lease, and nothing else reads it",
            ),
            (
                "DeleteStatement",
                "self._thread: threading.Thread | None = None",
                "the first `add` starts the thread on the pid test (`_pid` 0 is no process's)"
                " before its `or` reads `_thread`",
            ),
            (
                "NumberReplacer",
                "self._pid = 0",
                "the first `add` starts the thread whatever `_pid` says: `_thread` is None",
            ),
            (
                "DeleteStatement",
                "self._wake = threading.Event()",
                "the Renewer's first Event is never used: `add` makes a new one as it starts the"
                " thread, before anything waits on or sets it. The one in `add` shares this"
                " line's text: a child's own Event after a fork (the inherited one's lock may"
                " be held by the parent's thread mid-wait), which no test can fork into",
            ),
        ),
    ),
    "policy": Module(
        "agents_app/approvals/policy.py",
        (
            "tests/approvals/test_policy.py",
            "tests/approvals/test_admin.py",
            "tests/approvals/test_injection_suite.py",  # taint at sinks, pattern rules
        ),
    ),
    "taint": Module(
        "agents_app/engine/taint.py",
        ("tests/engine/test_taint.py",),
        core=False,
    ),
    "patterns": Module(
        "agents_app/approvals/patterns.py",
        ("tests/approvals/test_patterns.py",),
        core=False,
    ),
    "replay_provider": Module(
        "agents_app/engine/replay.py",
        ("tests/engine/test_replay_provider.py", "tests/runs/test_replay.py"),
        core=False,
    ),
    "exchange_frames": Module(
        "agents_app/engine/exchanges.py",
        (
            "tests/engine/test_exchange_frames.py",
            # Not its migrations' test: the mutants' runs have no migrations.
            "tests/runs/test_model_exchanges.py::test_a_planned_run_keeps_each_model_answer_in_the_order_it_was_asked",
            "tests/runs/test_model_exchanges.py::test_a_secret_in_the_model_s_answer_is_redacted_before_it_is_kept",
            "tests/runs/test_model_exchanges.py::test_the_request_hash_changes_with_the_prompt_and_not_otherwise",
        ),
        core=False,
    ),
    "fork_checks": Module(
        "agents_app/runs/forks/checks.py",
        ("tests/runs/test_fork.py", "tests/orchestration/test_team_fork.py"),
        core=False,
    ),
    "parking": Module(
        "agents_app/approvals/parking.py",
        (
            "tests/approvals/test_policy.py",
            "tests/approvals/test_parking.py",
            "tests/approvals/test_plan_decisions.py",
        ),
    ),
    "feeds": Module(
        "agents_app/streaming/feeds.py",
        (
            "tests/streaming/test_feeds.py",
            "tests/streaming/test_api_socket.py",
            "tests/streaming/test_sse.py",
        ),
    ),
    "writer": Module(
        "agents_app/runs/writer.py",
        (
            "tests/runs/test_writer.py",
            "tests/api/test_run_events.py",
            "tests/approvals/test_policy.py",  # parking: the writer's waiting_approval
            "tests/runs/test_pipelined_commits.py",
        ),
        equivalent=(
            _keyword_marker(
                "run_id: int, lease_token: str | None = None, *, run: Run | None = None"
            ),
            _keyword_marker("def read_again(run: Run, *, lock: bool = False) -> None:"),
            (
                "NumberReplacer",
                "RunEvent, run_id=self.run.pk, seq=0, type=type, payload=redact_all(payload or {})",
                "a fenced event's seq is a placeholder: the fence's flush numbers every event"
                " from the event_seq it returns before inserting them, and nothing reads it before",
            ),
            # SELECT ... FOR UPDATE: Django leaves it out on SQLite, where writers go one at a
            # time, and the mutation run is SQLite's; on PostgreSQL the takeover-while-
            # uncommitted test of tests/runs/test_writer.py catches the first two.
            (
                "AddNot",
                "row = (_RUN_LOCKED if lock else _RUN).get(run.pk)",
                "on SQLite a read with or without FOR UPDATE is the same read",
            ),
            (
                "ReplaceTrueWithFalse",
                "read_again(run, lock=True)",
                "on SQLite a read with or without FOR UPDATE is the same read",
            ),
            *(
                (
                    "NumberReplacer",
                    line,
                    "a sample value is a placeholder found once among the compiled query's"
                    " parameters and replaced by the caller's (core.prepared): any other does",
                )
                for line in (
                    "_RUN = Prepared(lambda pk: Run.objects.filter(pk=pk), samples=(-1,))",
                    "_RUN_LOCKED = Prepared(lambda pk: Run.objects.select_for_update()"
                    ".filter(pk=pk), samples=(-1,))",
                )
            ),
            (
                "ReplaceFalseWithTrue",
                "def read_again(run: Run, *, lock: bool = False) -> None:",
                "on SQLite a read with or without FOR UPDATE is the same read (every caller"
                " passes `lock` or wants none)",
            ),
        ),
    ),
    "execution": Module(
        "agents_app/worker/execution.py",
        (
            "tests/engine/test_execution.py",
            "tests/approvals/test_engine_flow.py",
            # chat answers and contract cycles run through the executor too
            "tests/conversations/test_chat_answers.py",
            "tests/conversations/test_chat_errors.py",
            "tests/conversations/test_contract_agents.py",
            "tests/worker/test_hot_path.py",  # a delivery's statements and transactions
            "tests/worker/test_phase_reasoning.py",  # a step's thinking
            "tests/engine/test_fast_path_runs.py",  # the plan a fast path shows
            "tests/orchestration/test_head_node_wait.py",  # a head node's wait
            "tests/orchestration/test_team_engine.py",  # a head node's delegation
        ),
        core=False,
        equivalent=(
            _keyword_marker("*,"),  # RunExecutor(…, *, run) and execute_run(run_id, *, …)
            _keyword_marker("def state_of(self, rows: RunRows, *, fresh: bool) -> RunState:"),
            _keyword_marker(
                "def start_step(self, w: Any, step: Step, resume: Resume | None, *,"
                " save: bool = True) -> None:"
            ),
            _keyword_marker(
                "def execute(self, rows: RunRows, step: Step, *, direct: bool) -> None:"
            ),
            _keyword_marker("def lock(self, *, fenced: bool = False) -> Any:"),
            (
                "DeleteStatement",
                "raise LeaseLost(str(stop)) from None",
                "a lost lease not raised here is raised by the next commit, which checks the"
                " lease first: the same LeaseLost, nothing written",
            ),
            _keyword_marker("def plan(self, rows: RunRows, *, start: bool = False) -> None:"),
            (
                "ReplaceTrueWithFalse",
                "@dataclass(frozen=True)",
                "nothing assigns to an Outcome's fields or hashes one",
            ),
            (
                "ReplaceOrWithAnd",
                "if step.status != StepStatus.PENDING or step.progress:",
                "a step's end or a plan's begins the next step, which has not begun: pending,"
                " with no progress (see the `return None` below)",
            ),
            (
                "ReplaceComparisonOperator_Gt_GtE",
                "if later.index > step.index and later.status == StepStatus.PENDING:",
                "the step that called finish_task is no longer pending (its outcome is set"
                " first), so counting it among the later ones skips nothing more",
            ),
            *(
                (
                    "NumberReplacer",
                    line,
                    "a sample value is a placeholder found once among the compiled query's"
                    " parameters and replaced by the caller's (core.prepared): any other does",
                )
                for line in (
                    "samples=(-1,),",
                    'RUN_WITH_TASK = Prepared(lambda pk: Run.objects.select_related("task")'
                    ".filter(pk=pk), samples=(-1,))",
                )
            ),
            (
                "DeleteStatement",
                "self.rows_kept: RunRows | None = None",
                "the first step_once sets rows_kept (its rows are None, so it loads them) before"
                " anything reads it",
            ),
            (
                "DeleteStatement",
                "self.started_next = None",
                "after a performer raised, its run ends in the same step_once (or, the lease"
                " lost, the delivery does): nothing reads started_next again",
            ),
            (
                "ReplaceComparisonOperator_Is_IsNot",
                "if self.started_next is not None and rows is self.rows_kept and not flagged:",
                "the rows a step's end started the next step from are always the ones kept:"
                " asked instead, next_action decides the same, to execute that step",
            ),
            (
                "DeleteStatement",
                "return None  # begun elsewhere (a takeover's, an approval's): executed, not"
                " started",
                "a step's end or a plan's begins the next step, which has not begun: a step"
                " interrupted or parked is the one a delivery executes first, never the next",
            ),
            (
                "NumberReplacer",
                "(run.lease_expires_at - timezone.now()).total_seconds() if run.lease_expires_at"
                " else 0",
                "a lease with no expiry leaves 0, 1 or -1 s: each is retried after the least"
                " wait, a second",
            ),
            (
                "NumberReplacer",
                "retry_in: float = 0.0",
                "only a busy outcome's retry_in is read (agents_app/tasks.py), and a busy"
                " outcome always sets it",
            ),
            (
                "ReplaceAndWithOr",
                "with self.lock(fenced=start and not run.task.approve_plan) as w:",
                "a plan the model made written fenced instead of under the row lock (a plan"
                " approval still parks under the lock): the same rows either way, the lease"
                " checked by the first statement or by the last, a person's flags brought back"
                " by either, a step start_next began put back by the next decision if they"
                " moved",
            ),
        ),
    ),
    "hooks": Module(
        "agents_app/worker/hooks.py",
        (
            "tests/engine/test_execution.py",
            "tests/approvals/test_engine_flow.py",
            "tests/core/audit/test_agent_actions.py",
            "tests/worker/test_hooks.py",
            # steering a chat answer, a contract cycle's Stop
            "tests/conversations/test_chat_answers.py",
            "tests/conversations/test_contract_agents.py",
            "tests/worker/test_hot_path.py",  # a tool call's row committed fenced
        ),
        core=False,
        equivalent=(
            _keyword_marker("*,"),  # DatabaseHooks(run, lease, step, *, …)
            _keyword_marker("def apply(self, w: RunWriter, *, usage: bool) -> None:"),
            _keyword_marker("def clear(self, *, usage: bool) -> None:"),
            _keyword_marker(
                "def commit(self, *, usage: bool = True, fenced: bool = False) -> Any:"
            ),
            _keyword_marker("def flush_tokens(self, *, ended: bool = True) -> None:"),
            (
                "ReplaceOrWithAnd",
                "if not self._buffer and (self._redactor is None or not ended):",
                "with nothing buffered, a redactor fed nothing lets nothing out mid-stream, and"
                " at a stream's end with no redactor a new one holds nothing: no token either"
                " way",
            ),
            _keyword_marker("def incoming(self, *, turn: int) -> list[tuple[Any, str]]:"),
            _keyword_marker(
                "self, text: str, *, phase: StreamPhase, step_index: int | None,"
                " reasoning: bool = False"
            ),
            (
                "ReplaceTrueWithFalse",
                "@dataclass(frozen=True)",
                "nothing assigns to a ToolCallHandle's fields or hashes one",
            ),
            (
                "ReplaceFalseWithTrue",
                "def commit(self, *, usage: bool = True, fenced: bool = False) -> Any:",
                "the hooks' own commits (a retry's event, a steered message, a child's usage"
                " before its tree is summed) change no status: written fenced or under the row"
                " lock they write the same rows, the lease checked by the last statement or by"
                " the first, a person's flags brought back by either",
            ),
            (
                "DeleteStatement",
                "give_back()  # what follows a commit is a wait: a tool, the model, the next"
                " delivery",
                "on SQLite, the mutation run's database, no connection is pooled and give_back"
                " does nothing (on PostgreSQL bench/concurrency.py counts a worker's connections)",
            ),
            (
                "DeleteStatement",
                "return []",
                "`incoming` is asked only by chat answers and contract attempts, which always have"
                " a conversation (the line is `pragma: no cover`): past it, a run without one"
                " finds no entry and gets [] all the same",
            ),
            (
                "DeleteStatement",
                "self._redactor = None",
                "a finished redactor holds nothing back: the next stream through it is redacted"
                " as through a new one",
            ),
        ),
    ),
    "decisions": Module(
        "agents_app/approvals/decisions.py",
        (
            "tests/approvals/test_api_decisions.py",
            "tests/approvals/test_plan_decisions.py",
            "tests/approvals/test_api_bulk.py",  # approvals_decide_many
            "tests/approvals/test_expiry.py",
            "tests/approvals/test_decision_service.py",  # its own limits and scoping
        ),
        core=False,
        equivalent=(
            (
                "NumberReplacer",
                "version = (latest.version if latest else 0) + 1",
                "a plan waiting for approval is its run's latest version: there always is one",
            ),
        ),
    ),
    # The kinds' recipes (runs.recipes): what the worker asks where the kinds of run differ.
    "recipes": Module(
        "agents_app/runs/recipes.py",
        # the table, and a worker's run made of RunRows
        ("tests/test_kind_recipes.py", "tests/runs/test_task_recipe.py"),
        core=False,
        equivalent=(
            _protocol("def lock(self, *, fenced: bool = False) -> AbstractContextManager[Any]:"),
            _protocol("def plan(self, rows: RunRows, *, start: bool = False) -> None:"),
            _protocol(VERIFY),
        ),
    ),
    "task_recipe": Module(
        "agents_app/runs/task_recipe.py",
        (
            "tests/engine/test_execution.py",
            "tests/worker/test_evidence_runs.py",
            "tests/approvals/test_engine_flow.py",
            "tests/engine/test_fast_path_runs.py",  # the fast path's derived verdict
            "tests/runs/test_task_recipe.py",  # the answer, a Stop mid-answer
            "tests/web/test_team_panel.py",  # name_in_tree, a child's
            "tests/orchestration/test_agent_names.py",  # agent_name, a child's
            "tests/worker/test_hot_path.py",  # transcript: a task's step end is fenced
            "tests/runs/test_failure_cause.py",  # verify: the cause before the judgement
            "tests/web/test_run_kinds.py",  # listed, plural, actions, page_link
        ),
        core=False,
        equivalent=(
            _keyword_marker(VERIFY),
            PROFILE_OF,
            RETURN_NONE,
            (
                "NumberReplacer",
                "priority = 0",
                "nothing reads a recipe's queue priority yet: it is declared for the queue that"
                " later issues give priorities",
            ),
        ),
        equivalent_results=(
            (
                "derived = fast_verdict(steps[ -1], can_replan=can_replan) if fast else None",
                "a fast plan has one step: its first is its last",
            ),
        ),
    ),
    "chat_recipe": Module(
        "agents_app/conversations/recipe.py",
        (
            "tests/conversations/test_chat_answers.py",
            "tests/conversations/test_chat_errors.py",
            "tests/conversations/test_chat_end_queries.py",  # transcript: the lock order
            "tests/conversations/test_chat_recipe.py",  # checks_evidence
            "tests/conversations/test_stopped_answer.py",  # keep_parked
            "tests/web/test_run_kinds.py",  # listed, plural, actions, page_link
        ),
        core=False,
        equivalent_results=tuple(
            (
                f"priority = {value}",
                "a chat answer goes before a person's other waiting runs, whose priority is 0:"
                " any priority above 0 orders them the same",
            )
            for value in (9, 11)
        ),
    ),
    "contract_recipe": Module(
        "agents_app/contracts/recipe.py",
        (
            "tests/conversations/test_contract_agents.py",
            "tests/contracts/test_log_writes.py",
            "tests/contracts/test_stop.py",
            "tests/contracts/test_evaluation.py",  # the evaluation's thinking
            "tests/runs/test_admission.py",  # its priority: background work, oldest first
            "tests/web/test_run_kinds.py",  # listed, plural, actions, page_link
        ),
        core=False,
        equivalent=(_keyword_marker(VERIFY),),
    ),
    "team_recipes": Module(
        "agents_app/orchestration/recipes.py",
        (
            "tests/orchestration/test_team_engine.py",
            "tests/orchestration/test_micro_agents.py",
            "tests/web/test_team_panel.py",
            "tests/orchestration/test_profile_room.py",  # frees_a_profile
            "tests/orchestration/test_agent_names.py",  # agent_name, a head node's
            "tests/orchestration/test_head_node_wait.py",  # wait
            "tests/web/test_run_kinds.py",  # listed, plural, actions, page_link
        ),
        core=False,
        equivalent=(
            _keyword_marker(VERIFY),
            PROFILE_OF,
            (
                "DeleteStatement",
                "return False  # the split into subtasks is always the model's",
                "TeamRecipe.plans_fast returning None instead of False: the worker only tests"
                " its truth",
            ),
        ),
    ),
    "delivery": Module(
        "agents_app/webhooks/services.py",
        (
            "tests/webhooks/test_delivery.py",
            "tests/webhooks/test_signing.py",
            "tests/webhooks/test_api.py",  # registering and deleting
        ),
        core=False,
        equivalent=(
            (
                "ReplaceTrueWithFalse",
                "@dataclass(frozen=True)",
                "nothing assigns to a DeliveryOutcome's fields or hashes one",
            ),
            (
                "NumberReplacer",
                "lambda owner_id: Webhook.objects.filter(owner_id=owner_id, active=True),"
                " samples=(-1,)",
                "a sample value is a placeholder found once among the compiled query's"
                " parameters and replaced by the caller's (core.prepared): any other does",
            ),
            (
                "DeleteStatement",
                "return []",
                "with no webhook wanting the event, inserting none writes nothing, queues"
                " nothing and returns no id",
            ),
            (
                "DeleteStatement",
                'error = ""',
                "every path that reads `error` set it first (an exception's text, or the"
                " status code's)",
            ),
            (
                "ReplaceTrueWithFalse",
                "response = client.send(request, stream=True)",
                "the answer's body is never read: streamed and closed, or read whole, the status"
                " is the same",
            ),
            (
                "DeleteStatement",
                "response.close()  # the answer's body is not needed",
                "leaving the client's `with` closes the connection and the answer with it",
            ),
        ),
        equivalent_results=(
            (
                "if status_code is not None and 199 <= status_code < 300:",
                "an answer in 1xx is never the final one (httpx reads past it): 199 cannot"
                " come back",
            ),
        ),
    ),
}


class DeleteStatement(Operator):
    """Replaces one statement inside a function with `pass`: an assignment, a call, a return,
    a raise. Cosmic Ray's core operators never delete, and a deleted line is the mutant that
    asks most directly whether a test depends on that line."""

    KINDS = ("expr_stmt", "return_stmt", "raise_stmt")

    def mutation_positions(self, node):
        if self._deletable(node):
            yield (node.start_pos, node.end_pos)

    def mutate(self, node, index):
        return Keyword("pass", node.start_pos, prefix=node.get_first_leaf().prefix)

    @classmethod
    def _deletable(cls, node) -> bool:
        parent = node.parent
        if parent is None or parent.type != "simple_stmt":
            return False
        if node.type not in cls.KINDS and not (
            node.type in ("atom_expr", "power") and node.children[-1].type == "trailer"
        ):
            return False
        scope = node.parent
        while scope is not None and scope.type not in ("funcdef", "classdef", "file_input"):
            scope = scope.parent
        return scope is not None and scope.type == "funcdef"

    @classmethod
    def examples(cls):
        return (Example("def f():\n    x = 1\n", "def f():\n    pass\n"),)


def _operators() -> dict[str, type[Operator]]:
    """The operators of this run: Cosmic Ray's core ones that make a plausible slip (a boundary,
    a negation, a swapped sign, a changed constant, a loop that never runs, a caught exception
    that is not the one raised), without its every-operator-to-every-other permutations, plus
    statement deletion."""
    comparisons = {
        ("Lt", "LtE"),
        ("LtE", "Lt"),
        ("Gt", "GtE"),
        ("GtE", "Gt"),
        ("Eq", "NotEq"),
        ("NotEq", "Eq"),
        ("Is", "IsNot"),
        ("IsNot", "Is"),
        ("Lt", "Gt"),
        ("Gt", "Lt"),
    }
    binaries = {("Add", "Sub"), ("Sub", "Add"), ("Mul", "Div"), ("Div", "Mul")}
    chosen: dict[str, type[Operator]] = {}
    for op in comparison_operator_replacement.operators():
        pair = tuple(op.__name__.split("_")[1:])
        if pair in comparisons:
            chosen[op.__name__] = op
    for op in binary_operator_replacement.operators():
        pair = tuple(op.__name__.split("_")[1:])
        if pair in binaries:
            chosen[op.__name__] = op
    for op in (
        boolean_replacer.AddNot,
        boolean_replacer.ReplaceTrueWithFalse,
        boolean_replacer.ReplaceFalseWithTrue,
        boolean_replacer.ReplaceAndWithOr,
        boolean_replacer.ReplaceOrWithAnd,
        break_continue.ReplaceBreakWithContinue,
        break_continue.ReplaceContinueWithBreak,
        exception_replacer.ExceptionReplacer,
        number_replacer.NumberReplacer,
        remove_decorator.RemoveDecorator,
        zero_iteration_for_loop.ZeroIterationForLoop,
        DeleteStatement,
    ):
        chosen[op.__name__] = op
    return chosen


# The local distributor runs in this process, so the operators are registered here, in place
# of every installed provider.
cosmic_ray.plugins.OPERATOR_PROVIDERS.clear()
cosmic_ray.plugins.OPERATOR_PROVIDERS["agentdesk"] = _operators()


@dataclass
class Outcome:
    name: str
    mutants: int = 0
    killed: int = 0
    timeouts: int = 0
    # Mutants that could not be applied or imported at all: not counted in the score.
    incompetent: int = 0
    survivors: list[str] = field(default_factory=list)
    # Mutants left out as equivalent (Module.equivalent): not counted in the score.
    equivalent: int = 0
    error: str = ""

    @property
    def score(self) -> float:
        return 100.0 * (self.killed + self.timeouts) / self.mutants if self.mutants else 0.0


def _tree(ref: str, name: str) -> Path:
    """A fresh copy of the committed tree at `ref` for one module's mutants."""
    target = WORK / f"{ref.replace('/', '_')}-{name}"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", "--format=tar", ref], cwd=ROOT, check=True, capture_output=True
    ).stdout
    with tempfile.TemporaryFile() as handle:
        handle.write(archive)
        handle.seek(0)
        with tarfile.open(fileobj=handle) as tar:
            tar.extractall(target, filter="data")
    return target


def _equivalent(module: Module, mutation, lines: list[str]) -> bool:
    line = lines[mutation.start_pos[0] - 1].strip()
    return any(
        mutation.operator_name.endswith(operator) and line == text
        for operator, text, _ in module.equivalent
    )


def _test_command(module: Module, tree: Path) -> str:
    # A test may be named by its node id (path::name): its file must exist.
    tests = [t for t in module.tests if (tree / t.partition("::")[0]).exists()]
    # `env -C`: the tests run in the copy (its tests and modules, not this checkout's).
    return " ".join(
        ["env", "-C", str(tree), sys.executable, "-m", "pytest", "-n", "0", "-x", "-q"]
        + ["-p", "no:cacheprovider", "--nomigrations", *tests]
        # hypothesis and schemathesis (for bench/schema_check.py) cost 2.5 s of imports a mutant.
        + ["-p", "no:hypothesispytest", "-p", "no:schemathesis"]
    )


def run_module(name: str, module: Module, ref: str, sample: int | None) -> Outcome:
    outcome = Outcome(name)
    tree = _tree(ref, name)
    if not any((tree / t.partition("::")[0]).exists() for t in module.tests):
        outcome.error = "none of its tests exist at this commit"
        return outcome
    command = _test_command(module, tree)
    # The baseline: the unmutated tree must pass, or every mutant would count as killed.
    baseline = subprocess.run(command.split(), capture_output=True, text=True)
    if baseline.returncode != 0:
        output = baseline.stdout[-3000:] + baseline.stderr[-3000:]
        outcome.error = f"the tests fail without a mutant:\n{output}"
        print(f"{name}: {outcome.error}", flush=True)
        return outcome
    session = tree / "mutation.sqlite"
    with use_db(str(session)) as db:
        cosmic_ray.commands.init([tree / module.path], db, {})
        lines = (tree / module.path).read_text().splitlines()
        items = [i for i in db.work_items if not _equivalent(module, i.mutations[0], lines)]
        outcome.equivalent = len(list(db.work_items)) - len(items)
        db.clear()
        db.add_work_items(items)
        if sample is not None:
            keep = {i.job_id for i in random.Random(17).sample(items, min(sample, len(items)))}
            db.clear()
            db.add_work_items([i for i in items if i.job_id in keep])
    config = ConfigDict(
        {
            "module-path": str(tree / module.path),
            "timeout": module.timeout,
            "test-command": command,
            "distributor": {"name": "local"},
        }
    )
    with use_db(str(session), mode=WorkDB.Mode.open) as db:
        cosmic_ray.commands.execute(db, config)
        for item, result in db.completed_work_items:
            outcome.mutants += 1
            if result.test_outcome == TestOutcome.INCOMPETENT:
                outcome.mutants -= 1
                outcome.incompetent += 1
            elif result.test_outcome == TestOutcome.SURVIVED:
                mutation = item.mutations[0]
                changed = [
                    line
                    for line in (result.diff or "").splitlines()
                    if line[:1] in "+-" and not line.startswith(("+++", "---"))
                ]
                known = {text for text, _ in module.equivalent_results}
                if any(line[1:].strip() in known for line in changed if line[:1] == "+"):
                    outcome.mutants -= 1
                    outcome.equivalent += 1
                    continue
                where = f"line {mutation.start_pos[0]}, {mutation.operator_name}"
                outcome.survivors.append("\n".join([where, *changed]))
            elif result.output == "timeout":
                outcome.timeouts += 1
            else:
                outcome.killed += 1
    print(f"{name}: {outcome.mutants} mutants, {len(outcome.survivors)} survived", flush=True)
    return outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help=f"of {', '.join(MODULES)}; default: the core")
    parser.add_argument("--extra", action="store_true", help="the non-core modules too")
    parser.add_argument("--ref", default="HEAD", help="the commit to mutate (default HEAD)")
    parser.add_argument("--sample", type=int, help="run only N mutants a module, chosen by seed")
    parser.add_argument("--jobs", type=int, default=1, help="modules mutated side by side")
    args = parser.parse_args()
    names = args.modules or [n for n, m in MODULES.items() if m.core or args.extra]
    if unknown := set(names) - set(MODULES):
        parser.error(f"no such module: {', '.join(sorted(unknown))}")
    # One thread per module: each waits on its own test processes in its own copy.
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_module, n, MODULES[n], args.ref, args.sample) for n in names]
        outcomes = [f.result() for f in futures]

    print(
        f"\nmutation run of {args.ref}"
        + (f", {args.sample} mutants a module" if args.sample else "")
    )
    print("| module | mutants | killed | timeouts | survived | score | incompetent | equivalent |")
    print("|---|---|---|---|---|---|---|---|")
    for o in outcomes:
        print(
            f"| {MODULES[o.name].path} | {o.mutants} | {o.killed} | {o.timeouts} "
            f"| {len(o.survivors)} | {o.score:.0f}% | {o.incompetent} | {o.equivalent} |"
        )
    for o in outcomes:
        if o.error:
            print(f"\n## {o.name}: {o.error}")
        for survivor in o.survivors:
            print(f"\n## {o.name} survivor: {survivor}")


if __name__ == "__main__":
    main()
