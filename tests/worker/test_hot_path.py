"""What a step costs the database: a multi-step run with an instant model and a no-op tool
(tests/support/instant.py), executed by the real engine, counted in queries. Transactional, so
each commit is a real BEGIN ... COMMIT as on a worker, not a savepoint in the test's
transaction. The benchmarks time the same loop (bench/run_overhead.py)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents_app.models import AuditEvent, Run, RunEvent, Step, Task, ToolCall
from agents_app.worker.execution import execute_run
from tests.support.instant import instant_llm, noop_registry

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dialect]

# Issue 16: what one step with one tool call sends to the database, at most: eight queries in two
# transactions (the call's row before the call, the step's end after it). Counted alike on both
# databases as Django's query log counts them (django_assert_max_num_queries), with the
# transactions' own BEGIN and COMMIT counted apart: Django logs a BEGIN for SQLite (a statement
# it sends, BEGIN IMMEDIATE) and for PostgreSQL (psycopg's, sent before the first query), and a
# COMMIT for both. Issue 36 adds one: the step's model exchanges, one INSERT folded into the
# step's end (worker.commits.PendingWrites), in no transaction of their own.
QUERIES_PER_STEP = 9
TRANSACTIONS_PER_STEP = 2


def is_control(sql: str) -> bool:
    return sql.startswith(("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT"))


def a_run(owner, steps: int) -> Run:
    task = Task.objects.create(owner=owner, text="hot path")
    return Run.objects.create(task=task, owner=owner, max_tokens=10**9, max_tool_calls=10**6)


def executed(run: Run, steps: int) -> Run:
    execute_run(run.pk, provider=instant_llm(steps), registry=noop_registry())
    return Run.objects.get(pk=run.pk)


def statements_of(owner, steps: int) -> list[str]:
    """What a run of `steps` steps sends to the database, from its lease to its end, as
    Django's query log has it (BEGIN and COMMIT included)."""
    run = a_run(owner, steps)
    with CaptureQueriesContext(connection) as log:
        run = executed(run, steps)
    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert Step.objects.filter(run=run, status="completed").count() == steps
    return [query["sql"] for query in log.captured_queries]


def test_a_step_with_one_tool_call_sends_at_most_eight_queries(
    owner, settings, django_assert_max_num_queries
):
    settings.AGENT_MAX_STEPS = 40
    short = statements_of(owner, 10)
    fixed = [sql for sql in short if not is_control(sql)]
    fixed_transactions = sum(sql.startswith("BEGIN") for sql in short)
    extra = 30  # steps: the run's start, plan and verdict cost the same in both runs
    long_run = a_run(owner, 40)

    # A transaction is two entries of the log more: its BEGIN and its COMMIT.
    with django_assert_max_num_queries(
        len(short) + extra * (QUERIES_PER_STEP + 2 * TRANSACTIONS_PER_STEP)
    ) as log:
        long_run = executed(long_run, 40)
    assert long_run.status == "succeeded"
    long = [query["sql"] for query in log.captured_queries]

    queries = [sql for sql in long if not is_control(sql)]
    transactions = sum(sql.startswith("BEGIN") for sql in long)
    assert len(queries) - len(fixed) <= extra * QUERIES_PER_STEP, (len(fixed), len(queries))
    assert transactions - fixed_transactions <= extra * TRANSACTIONS_PER_STEP


def test_what_a_step_costs_does_not_grow_with_the_steps_before_it(owner, settings):
    settings.AGENT_MAX_STEPS = 45
    counts = [len(statements_of(owner, steps)) for steps in (5, 25, 45)]

    assert counts[1] - counts[0] == counts[2] - counts[1], counts


def test_every_call_result_event_and_audit_row_of_a_run_is_written(owner, settings):
    steps = 5
    settings.AGENT_MAX_STEPS = steps
    run = executed(a_run(owner, steps), steps)

    calls = ToolCall.objects.filter(run=run)
    assert [c.status for c in calls] == ["succeeded"] * steps
    seqs = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, run.event_seq + 1))
    types = list(RunEvent.objects.filter(run=run).values_list("type", flat=True))
    assert (types.count("tool_call"), types.count("tool_result")) == (steps, steps)
    # plan + a tool turn and an answer per step + verdict
    assert types.count("llm_usage") == 2 * steps + 2
    assert AuditEvent.objects.filter(run_id=run.pk, action="llm.call").count() == 2 * steps + 2
    assert AuditEvent.objects.filter(run_id=run.pk, action="tool.call").count() == steps
    assert run.prompt_tokens == run.completion_tokens == 2 * steps + 2


class Answers:
    """A model that answers every step at once, calling nothing."""

    def complete(self, request):
        from agents_app.engine.llm import LLMResponse, Usage

        return LLMResponse(content="42", usage=Usage(1, 1))


def test_a_one_step_fast_path_run_is_two_transactions_from_its_lease_to_its_end(owner):
    """The start, its plan and its step's start in one commit; the step's end, verifying, the
    verdict derived from the step and the run's end in the other, which hands the lease back
    too (issue 31: it was three, the verdict in a commit of its own)."""
    task = Task.objects.create(owner=owner, text="What is six times seven?", fast_path=True)
    run = Run.objects.create(task=task, owner=owner, max_tokens=10**6, max_tool_calls=10)
    with CaptureQueriesContext(connection) as log:
        execute_run(run.pk, provider=Answers(), registry=noop_registry())
    run.refresh_from_db()
    assert (run.status, run.final_response, run.lease_owner) == ("succeeded", "42", "")

    statements = [query["sql"] for query in log.captured_queries]
    assert sum(sql.startswith("BEGIN") for sql in statements) == 2, statements
    # The lease went with the end: after its COMMIT only the read of whether the person has
    # runs waiting their turn (runs.admission), which none does here.
    assert statements[-2].startswith("COMMIT") and statements[-1].startswith("SELECT")
    assert "waiting_turn" in statements[-1]
    # It made no tool call: its end neither closes nor reads any.
    assert not [sql for sql in statements if "agents_app_toolcall" in sql], statements
    # Every status it went through is still told, in order, each once.
    said = RunEvent.objects.filter(run=run, type="run_status").order_by("seq")
    assert [e.payload["status"] for e in said] == ["planning", "running", "verifying", "succeeded"]
    types = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("type", flat=True))
    assert types.index("plan_created") < types.index("step_started") < types.index("step_completed")
    assert Step.objects.get(run=run).status == "completed"
