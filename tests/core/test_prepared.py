"""Queries compiled once (core.prepared) read what the ORM reads: the same models, related
rows and values, on SQLite and PostgreSQL, with the values of each call, and one statement."""

import datetime

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agents_app.core.prepared import Prepared
from agents_app.models import LLMConnection, Plan, Run, Task

pytestmark = [pytest.mark.django_db, pytest.mark.dialect]

RUN = Prepared(
    lambda pk: Run.objects.select_related("task", "connection").filter(pk=pk), samples=(-1,)
)
PLANS = Prepared(
    lambda run_id, reason: Plan.objects.filter(run_id=run_id, reason=reason).order_by("version"),
    samples=(-1, "\x00sample"),
)
VERSIONS = Prepared(
    lambda run_id: Plan.objects.filter(run_id=run_id).order_by("version").values_list("version"),
    samples=(-1,),
)


def fields(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


@pytest.fixture
def runs(owner):
    model = LLMConnection.objects.create(name="prepared", base_url="http://x/v1", model="m")
    made = []
    for n in range(2):
        task = Task.objects.create(owner=owner, text=f"task {n}", context={"n": [n, None, "é"]})
        run = Run.objects.create(
            task=task,
            owner=owner,
            max_tokens=100 + n,
            max_tool_calls=3,
            connection=model if n else None,
            started_at=timezone.now() - datetime.timedelta(days=n, microseconds=7),
        )
        for version in (2, 1):
            Plan.objects.create(run=run, version=version, reason="r", raw={"v": version})
        Plan.objects.create(run=run, version=3, reason="other", raw={})
        made.append(run)
    return made


def test_a_model_and_its_related_rows_are_read_as_the_orm_reads_them(runs):
    for run in runs:
        expected = Run.objects.select_related("task", "connection").get(pk=run.pk)
        with CaptureQueriesContext(connection) as log:
            read = RUN.get(run.pk)
            # select_related: the task and the connection came with the row
            task, model = read.task, read.connection

        assert len(log.captured_queries) == 1
        assert fields(read) == fields(expected)
        assert fields(task) == fields(expected.task)
        assert task.context == {"n": [run.task.context["n"][0], None, "é"]}
        assert (model and fields(model)) == (expected.connection and fields(expected.connection))
        assert read.started_at.tzinfo is not None
        assert not read._state.adding and read._state.db == "default"


def test_each_call_sends_its_own_values(runs):
    first, second = runs

    assert [(p.run_id, p.version) for p in PLANS.rows(first.pk, "r")] == [
        (first.pk, 1),
        (first.pk, 2),
    ]
    assert [p.version for p in PLANS.rows(second.pk, "other")] == [3]
    assert PLANS.rows(second.pk, "none") == []
    assert PLANS.one(first.pk, "r").raw == {"v": 1}
    assert VERSIONS.rows(second.pk) == [(1,), (2,), (3,)]


def test_a_missing_row_is_none_or_does_not_exist(runs):
    assert RUN.one(10**9) is None
    with pytest.raises(Run.DoesNotExist):
        RUN.get(10**9)


def test_a_locked_read_locks_where_the_database_can(runs):
    locked = Prepared(lambda pk: Run.objects.select_for_update().filter(pk=pk), samples=(-1,))
    with transaction.atomic(), CaptureQueriesContext(connection) as log:
        assert locked.get(runs[0].pk).pk == runs[0].pk
    sql = log.captured_queries[-1]["sql"]
    assert ("FOR UPDATE" in sql) == connection.features.has_select_for_update


@pytest.mark.parametrize(
    "build, samples",
    [
        (lambda a, b: Run.objects.filter(pk=a, owner_id=b), (1, 1)),  # twice
        (lambda text: Task.objects.filter(text__contains=text), ("sample",)),  # rewritten
    ],
    ids=["found-twice", "rewritten"],
)
def test_a_sample_not_found_once_as_itself_is_refused(runs, build, samples):
    with pytest.raises(ValueError, match="sample"):
        Prepared(build, samples=samples).rows(*samples)
