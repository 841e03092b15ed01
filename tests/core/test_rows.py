"""The hot path's short-way INSERT and UPDATE (core.rows) write what the ORM would: read back
through the ORM, a row is the same on SQLite and PostgreSQL."""

import datetime

import pytest
from django.db import connection
from django.utils import timezone

from agents_app.core import rows
from agents_app.core.audit import audit_event
from agents_app.models import AuditEvent, Plan, Run, RunEvent, Step, Task, ToolCall

# The tests write RunEvent rows of their own (the store is what they test).
pytestmark = [pytest.mark.django_db, pytest.mark.fabricated_events]


@pytest.fixture
def step(owner):
    task = Task.objects.create(owner=owner, text="rows")
    run = Run.objects.create(task=task, owner=owner, max_tokens=1000, max_tool_calls=10)
    plan = Plan.objects.create(run=run, version=1)
    return Step.objects.create(plan=plan, run=run, index=0, objective="write rows")


@pytest.mark.dialect
def test_rows_inserted_read_back_as_the_orm_wrote_them(step):
    when = timezone.now() - datetime.timedelta(days=3, microseconds=17)
    payloads = [{"n": i, "text": "é ✓", "nested": {"list": [1, None, True]}} for i in range(3)]
    events = [
        RunEvent(run=step.run, seq=i + 1, type="tool_result", payload=p, created_at=when)
        for i, p in enumerate(payloads)
    ]

    rows.insert(events)

    read = list(RunEvent.objects.filter(run=step.run).order_by("seq"))
    assert [(e.seq, e.type, e.payload, e.created_at) for e in read] == [
        (i + 1, "tool_result", p, when) for i, p in enumerate(payloads)
    ]
    assert all(not e._state.adding for e in events)


@pytest.mark.dialect
def test_ids_come_back_in_the_rows_order_and_null_json_stays_null(step):
    calls = [
        ToolCall(run=step.run, step=step, tool=f"tool{i}", arguments={"i": i}) for i in range(4)
    ]

    rows.insert(calls, ids=True)

    assert [c.pk for c in calls] == list(
        ToolCall.objects.filter(run=step.run).order_by("pk").values_list("pk", flat=True)
    )
    for call in calls:
        row = ToolCall.objects.get(pk=call.pk)
        assert (row.tool, row.arguments, row.result, row.status) == (
            call.tool,
            call.arguments,
            None,
            "running",
        )
    assert ToolCall.objects.filter(pk=calls[0].pk, result__isnull=True).exists()


@pytest.mark.dialect
def test_many_rows_are_split_into_statements_and_all_written(step):
    audit = [
        audit_event(action="tool.call", interface="worker", run_id=step.run_id, details={"i": i})
        for i in range(rows.ROWS_A_STATEMENT * 2 + 5)
    ]

    rows.insert(audit)

    written = AuditEvent.objects.filter(run_id=step.run_id).order_by("id")
    assert [a.details["i"] for a in written] == list(range(len(audit)))
    assert {a.actor_label for a in written} == {"worker"}


@pytest.mark.dialect
def test_an_update_writes_the_fields_named_on_the_row_named(step):
    calls = [ToolCall(run=step.run, step=step, tool="t", arguments={}) for _ in range(2)]
    rows.insert(calls, ids=True)

    changed = rows.update(
        ToolCall, calls[0].pk, status="succeeded", result={"ok": [1, 2]}, duration_ms=5
    )

    assert changed == 1
    first, second = (ToolCall.objects.get(pk=c.pk) for c in calls)
    assert (first.status, first.result, first.duration_ms) == ("succeeded", {"ok": [1, 2]}, 5)
    assert (second.status, second.result, second.duration_ms) == ("running", None, None)
    assert rows.update(ToolCall, 10**9, status="failed") == 0


@pytest.mark.dialect
def test_a_naive_datetime_is_prepared_as_the_orm_prepares_it(step, settings):
    naive = datetime.datetime(2026, 1, 2, 3, 4, 5)
    with pytest.warns(RuntimeWarning, match="naive datetime"):
        rows.insert([RunEvent(run=step.run, seq=1, type="x", payload={}, created_at=naive)])

    assert RunEvent.objects.get(run=step.run).created_at == timezone.make_aware(naive)


@pytest.mark.dialect
@pytest.mark.parametrize(
    "when",
    [
        datetime.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.UTC),
        datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC),  # no fraction written
        datetime.datetime(
            2026, 1, 2, 3, 4, 5, 6, tzinfo=datetime.timezone(datetime.timedelta(hours=2))
        ),
    ],
    ids=["utc", "utc-whole-second", "plus-two-hours"],
)
def test_an_aware_datetime_is_written_as_the_orm_writes_it(step, when):
    RunEvent.objects.create(run=step.run, seq=1, type="orm", payload={}, created_at=when)
    rows.insert([RunEvent(run_id=step.run_id, seq=2, type="rows", payload={}, created_at=when)])

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT CAST(created_at AS TEXT) FROM agents_app_runevent WHERE run_id = %s "
            "ORDER BY seq",
            [step.run_id],
        )
        by_the_orm, by_rows = (row[0] for row in cursor.fetchall())
    assert by_rows == by_the_orm
    assert [e.created_at for e in RunEvent.objects.filter(run=step.run)] == [when, when]


def fields_of(obj):
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


@pytest.mark.parametrize("model", [RunEvent, ToolCall, AuditEvent])
def test_a_row_built_the_short_way_is_the_one_its_constructor_builds(model, step, owner):
    when = timezone.now()
    given = {
        RunEvent: {"run_id": step.run_id, "seq": 4, "type": "x", "created_at": when},
        ToolCall: {"run_id": step.run_id, "step": step, "tool": "noop", "created_at": when},
        AuditEvent: {"action": "a", "interface": "worker", "actor": owner, "created_at": when},
    }[model]
    built, constructed = rows.new(model, **given), model(**given)

    assert fields_of(built) == fields_of(constructed)
    assert built._state.adding and built._state.db is None
    related = {RunEvent: None, ToolCall: "step", AuditEvent: "actor"}[model]
    if related:  # the object given stands for itself: no query to read it again
        assert getattr(built, related) is given[related]


def test_defaults_are_made_for_each_row_not_shared(step):
    first = rows.new(RunEvent, run_id=step.run_id, seq=1, type="x")
    second = rows.new(RunEvent, run_id=step.run_id, seq=2, type="x")

    first.payload["changed"] = True
    assert second.payload == {} and first.created_at is not None


def test_an_unknown_name_is_refused_as_the_constructor_refuses_it(step):
    with pytest.raises(TypeError, match="colour"):
        rows.new(RunEvent, run_id=step.run_id, colour="red")


def test_a_model_with_init_receivers_is_not_built_the_short_way():
    from django.db.models.signals import post_init

    from agents_app.models import Plan as Model

    def receiver(**kwargs):
        pass

    post_init.connect(receiver, sender=Model)
    rows._shapes.pop(Model, None)
    try:
        with pytest.raises(TypeError, match="init signal"):
            rows.new(Model, version=1)
    finally:
        post_init.disconnect(receiver, sender=Model)
        rows._shapes.pop(Model, None)


@pytest.mark.dialect
def test_a_row_built_the_short_way_is_written_and_read_back(step):
    event = rows.new(RunEvent, run=step.run, seq=9, type="tool_result", payload={"é": [1]})

    rows.insert([event])

    assert RunEvent.objects.get(run=step.run, seq=9).payload == {"é": [1]}
