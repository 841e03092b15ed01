"""A run's steps as the executor writes and decides on them: one UPDATE for a step's outcome and
the next step's start, the steps as the decision sees them, what a replan is told of them."""

from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections

from agents_app.core import rows
from agents_app.engine.decide import StepBoard, StepState
from agents_app.engine.plan_edits import planner_notice
from agents_app.engine.untrusted import as_data
from agents_app.models import Run, Step
from agents_app.runs.evidence import plan_edit

# A step's row at its start.
STEP_STARTED = ["status", "retry_count", "started_at", "progress"]
# A step's row at its end (its outcome), and the next step's (its start) in the same statement.
STEP_WRITTEN_AT_ITS_END = [
    "status",
    "output",
    "error",
    "thinking",
    "finished_at",
    "retry_count",
    "started_at",
]


def board_of(steps: list[Step]) -> StepBoard:
    """The board decisions on `steps` (a plan's, in index order) are made from: built from
    them the first time, then told each change of a step's status by Step.set_status. A run's
    steps are looked at before every step: a decision on step 500 should cost about what it
    costs on step 5."""
    board = steps[0].__dict__.get("_board") if steps else None
    if board is None or len(board) != len(steps):
        board = StepBoard(StepState(s.index, s.status, tuple(s.depends_on)) for s in steps)
        for step in steps:
            step.__dict__["_board"] = board
    elif CHECKED:
        told = [(s.index, s.status) for s in board.states]
        actual = [(s.index, s.status) for s in steps]
        if told != actual:
            raise AssertionError(
                f"a step's status changed without Step.set_status: the board has {told}, "
                f"the steps {actual}"
            )
    return board


# Tests set this (tests/conftest.py): every board is compared with its steps when it is used.
CHECKED = False


def step_at(steps: list[Step], index: int) -> Step:
    """The step of `steps` (a plan's, in index order) with `index`: found where it stands,
    without a search, as a plan's steps are numbered from 0."""
    if index < len(steps) and steps[index].index == index:
        return steps[index]
    return next(s for s in steps if s.index == index)


def write_steps(
    steps: list[Step], fields: list[str], calls: dict[int, bytes] | None = None
) -> None:
    """Write `fields` of `steps` in one UPDATE (a CASE on the id per column): a step's outcome
    and the next step's start. Django's bulk_update says the same, at ten times the CPU. With
    `calls` (RunWriter.step_calls), what the commit appends to these steps' model calls goes
    in the same statement, and out of `calls`."""
    appended = [calls.pop(step.pk, b"") for step in steps] if calls else []
    if not any(appended):
        appended = []
    conn = connections[DEFAULT_DB_ALIAS]
    if len(steps) == 1 and not appended:
        step = steps[0]
        rows.update(Step, step.pk, **{name: getattr(step, name) for name in fields})
        return
    sql, prepared = steps_statement(conn, tuple(fields), len(steps), bool(appended))
    params: list[Any] = []
    for field, prepare in prepared:
        for step in steps:
            value = getattr(step, field.attname)
            params += [step.pk, value if prepare is None else prepare(value, conn)]
    for step, more in zip(steps, appended, strict=False):
        params += [step.pk, more]
    with conn.cursor() as cursor:
        cursor.execute(sql, [*params, *(step.pk for step in steps)])


def append_step_calls(calls: dict[int, bytes]) -> None:
    """What a commit appends to its steps' model calls and write_steps did not write: one
    UPDATE a step (a commit that does not write the step: one where it waits for a person)."""
    if not calls:
        return
    conn = connections[DEFAULT_DB_ALIAS]
    quote = conn.ops.quote_name
    sql = (
        f"UPDATE {quote(Step._meta.db_table)} SET {quote('model_calls')} = "
        f"{_appended(conn, '%s')} WHERE {quote('id')} = %s"
    )
    with conn.cursor() as cursor:
        for step_id, more in calls.items():
            cursor.execute(sql, [more, step_id])
    calls.clear()


def _appended(conn: Any, value: str) -> str:
    """SQL for the step's model calls with `value` (bytes) after them."""
    column = conn.ops.quote_name("model_calls")
    if conn.vendor == "sqlite":
        return f"CAST({column} || {value} AS BLOB)"  # joined as text: the same bytes
    return f"{column} || {value}"


# write_steps' UPDATE for each (database, fields, number of steps, calls appended or not).
_statements: dict[tuple[str, tuple[str, ...], int, bool], tuple[str, list[Any]]] = {}


def steps_statement(
    conn: Any, fields: tuple[str, ...], count: int, calls: bool = False
) -> tuple[str, list[Any]]:
    key = (conn.vendor, fields, count, calls)
    shape = _statements.get(key)
    if shape is None:
        quote = conn.ops.quote_name
        # PostgreSQL cannot tell a CASE's type from bare parameters: each value is cast.
        cast = conn.vendor == "postgresql"
        assignments, prepared = [], []
        for name in fields:
            field = Step._meta.get_field(name)
            value = f"CAST(%s AS {field.db_type(conn)})" if cast else "%s"
            whens = " ".join(f"WHEN %s THEN {value}" for _ in range(count))
            assignments.append(f"{quote(field.column)} = CASE {quote('id')} {whens} END")
            prepared.append((field, rows.preparer(field)))
        if calls:
            more = _appended(conn, "CAST(%s AS bytea)" if cast else "%s")
            whens = " ".join(f"WHEN %s THEN {more}" for _ in range(count))
            assignments.append(f"{quote('model_calls')} = CASE {quote('id')} {whens} END")
        ids = ", ".join("%s" for _ in range(count))
        sql = (
            f"UPDATE {quote(Step._meta.db_table)} SET {', '.join(assignments)} "
            f"WHERE {quote('id')} IN ({ids})"
        )
        shape = _statements[key] = (sql, prepared)
    return shape


def replan_history(run: Run, steps: list[Step]) -> str:
    said = "\n".join(
        f"Step {s.index} ({s.status}): {s.objective}\n  {(s.output or s.error)[:2000]}"
        for s in steps
    )
    # What the steps said holds what their tools returned: data (issue 35).
    lines = [as_data(said, "earlier plan's steps")] if said else []
    lines.append(f"Why a new plan: {run.replan_reason}")
    edit = plan_edit(run)
    if edit is not None:
        lines.append(planner_notice(edit))
    return "\n".join(lines)
