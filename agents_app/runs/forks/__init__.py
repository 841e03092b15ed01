"""A fork of a run (issue 36): a new run of its source's kind and task that goes on after one of
the source's completed steps, optionally with the remaining steps edited, an extra instruction
for every later step, or another LLM connection.

The fork is no new execution path. Its plan is written when it is created: the source's steps
up to N copied (their status, output, thinking, tool calls and times: they are not run again),
the remaining ones as planned or as edited. Its workspace is rebuilt from the source's journal
as it was after step N (runs.journal_files), and the journal's rows up to there come with it,
so its own journal goes on from that state. Then it is queued like any run; the worker starts
a run whose plan was written ahead (`Run.planned_ahead`) at its first step not done, without
asking a model for a plan (worker.execution), and its later steps see the copied ones as
earlier steps, as the source's did.

Steps are numbered as the run page numbers them (step N is the plan's index N-1). Whether a
kind may be forked is its recipe's answer (`"fork" in recipe.actions`): a chat answer, a
contract attempt, a child or a micro agent is not forked on its own; where the source stood
after step N, and what else comes with its fork, is its recipe's answer too (`fork_point`,
`fork_along`: a team's head node brings its children of the steps up to N,
orchestration.forks). Only regular files are rebuilt: the journal keeps no content of a link
or a special file, so those are not recreated (the fork's `origin_options` lists them).

A source's plan that still waits for a person's approval, an approval timeout and the like
are not the fork's concern: the person who forks chose its plan, so the fork never parks on
it (Task.approve_plan is not asked again)."""

from typing import Any

from django.db import transaction

from agents_app.connections.services import connection_for_phase
from agents_app.core.audit import RUN_FORK, audit_record
from agents_app.models import (
    ChangeKind,
    Origin,
    Run,
)
from agents_app.runs.admission import admission_check, run_admit
from agents_app.runs.control import refuse_while_halted
from agents_app.runs.forks.checks import (
    ForkPoint,
    checked_steps,
    edited_steps,
    in_flight,
    instruction_text,
    journal_stopped,
    own_fork_point,
    source_plan,
    step_number,
)
from agents_app.runs.forks.copies import (
    Copies,
    copy_journal,
    copy_plan,
    files_at,
    rebuild_workspace,
)
from agents_app.runs.selectors import run_get
from agents_app.runs.services import ended_run, refuse_unless_offered, run_create


@transaction.atomic
def run_fork(
    *,
    user: Any,
    run_id: int,
    after_step: Any,
    plan_version: Any = None,
    steps: Any = None,
    instruction: Any = "",
    connection: Any = None,
    actor: Any,
    interface: str,
) -> Run:
    """A fork of `user`'s run `run_id` after its completed step `after_step` of plan version
    `plan_version` (None: the latest), queued. `steps`: the remaining steps' objectives to do
    instead of the source's (None: as planned); `instruction`: added to every later step's
    input; `connection`: an enabled LLM connection's id or name to run on (None: the
    source's). Returns the new run. Raises DomainError NOT_FOUND for another person's run,
    CONFLICT while it works, for a kind not forked on its own, or where the workspace after
    the step cannot be rebuilt, VALIDATION_ERROR (details.field) for bad input, and as
    task_submit does while the kill switch is engaged or the person's queue is full."""
    source = run_get(user=user, run_id=run_id)
    recipe = refuse_unless_offered(source, "fork", "forked")
    with ended_run(source.pk, "; a run is forked once it ended") as w:
        source = w.run
    number = step_number(after_step)
    plan = source_plan(source, plan_version)
    source_steps = checked_steps(source, plan, number)
    point = recipe.fork_point(source, plan, source_steps, number)
    edited = edited_steps(steps, number)
    extra = instruction_text(instruction)
    chosen = connection_for_phase(connection, field="connection")
    refuse_while_halted()
    turns = admission_check(source.owner_id)

    fork = run_create(task=source.task, kind=source.kind, close_policy=source.close_policy)
    if chosen is None and source.connection is not None and source.connection.enabled:
        chosen = source.connection  # the source's, unless the fork was asked for another
    options: dict[str, Any] = {}
    if edited is not None:
        options["steps"] = edited
    if extra:
        options["instruction"] = extra
    if chosen is not None and connection not in (None, ""):
        options["connection_id"] = chosen.pk
    copies = copy_plan(fork, plan, source_steps, number, edited)
    journal_seq, journal_bytes = copy_journal(fork, point.own, copies)
    files = files_at(point.changes)
    not_recreated = [f.path for f in files if f.kind != ChangeKind.WRITE]
    if not_recreated:
        options["not_recreated"] = not_recreated
    fields: dict[str, Any] = {
        **recipe.fork_along(source, fork, copies, number),
        "origin": Origin.FORK,
        "origin_run": source,
        "origin_step": number,
        "origin_plan_version": plan.version,
        "origin_options": options,
        "tool_calls_made": len(copies.calls),
        "journal_seq": journal_seq,
        "journal_bytes": journal_bytes,
    }
    if chosen is not None:
        fields.update(connection=chosen, llm_model=chosen.model)
    for name, value in fields.items():
        setattr(fork, name, value)
    fork.save(update_fields=list(fields))
    audit_record(
        action=RUN_FORK,
        interface=interface,
        actor=actor,
        run=source,
        details={
            "new_run_id": fork.pk,
            "after_step": number,
            "plan_version": plan.version,
            **{k: v for k, v in options.items() if k != "not_recreated"},
        },
    )
    rebuild_workspace(fork, source, files)
    run_admit(fork, turns)
    return fork


__all__ = [
    "Copies",
    "ForkPoint",
    "copy_journal",
    "copy_plan",
    "files_at",
    "in_flight",
    "journal_stopped",
    "own_fork_point",
    "run_fork",
]
