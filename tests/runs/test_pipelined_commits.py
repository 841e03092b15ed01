"""A worker's hot-path commit goes to PostgreSQL as a pipeline (runs.writer.fenced_run), and
any statement in it still sees its true row count (config/postgresql: the cursor waits for the
answers pending before it tells one), so Django's save(update_fields=...) and
QuerySet.update work in it as anywhere. On SQLite the same commit is sent as before."""

import pytest
from django.db import connection

from agents_app.models import Run, RunStatus, Step
from agents_app.runs.writer import LeaseLost, fenced_run
from tests.support.runs import advance, make_run

from .test_writer import held

pytestmark = [pytest.mark.django_db, pytest.mark.dialect]


def in_pipeline() -> bool:
    raw = connection.connection
    return raw is not None and getattr(raw, "_pipeline", None) is not None


def test_a_fenced_commit_is_pipelined_on_postgresql_and_row_counts_are_true(owner):
    run = held(advance(make_run(owner), RunStatus.RUNNING), "worker-1")
    step = Step.objects.filter(run=run).first()
    with fenced_run(run, "worker-1") as w:
        assert in_pipeline() == (connection.vendor == "postgresql")
        # Django reads the row count right after each of these.
        assert Run.objects.filter(pk=run.pk).update(replans=1) == 1
        assert Run.objects.filter(pk=-1).update(replans=1) == 0
        if step is not None:
            step.error = "noted"
            step.save(update_fields=["error"])
        w.set(final_response="written")
        w.transition(RunStatus.VERIFYING)
    assert not in_pipeline()
    fresh = Run.objects.get(pk=run.pk)
    assert (fresh.status, fresh.final_response, fresh.replans) == ("verifying", "written", 1)


def test_a_lost_lease_in_a_pipelined_commit_writes_nothing(owner):
    run = held(advance(make_run(owner), RunStatus.RUNNING), "worker-1")
    with pytest.raises(LeaseLost), fenced_run(run, "someone-else") as w:
        Run.objects.filter(pk=run.pk).update(replans=5)
        w.set(final_response="never")
    fresh = Run.objects.get(pk=run.pk)
    assert (fresh.replans, fresh.final_response, fresh.lease_owner) == (0, "", "worker-1")
    assert Run.objects.filter(pk=run.pk).update(replans=2) == 1  # the connection still works
