"""A worker's hot-path commit goes to PostgreSQL as a pipeline (runs.writer.fenced_run), and
any statement in it still sees its true row count (config/postgresql: the cursor waits for the
answers pending before it tells one), so Django's save(update_fields=...) and
QuerySet.update work in it as anywhere. On SQLite the same commit is sent as before."""

import pytest
from django.db import IntegrityError, connection

from agents_app.models import ChangeKind, Run, RunStatus, Step, WorkspaceChange
from agents_app.runs.journal import changes_write
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


def test_rows_numbered_before_a_takeover_are_a_lost_lease_not_a_crash(owner):
    # A frozen worker's commit numbers its workspace changes from the run as it last read it;
    # the worker that took the run over has written those numbers since. The collision is
    # the lease lost (the worker stops quietly), and nothing of the commit is written.
    run = held(advance(make_run(owner), RunStatus.RUNNING), "worker-1")
    stale = Run.objects.get(pk=run.pk)
    WorkspaceChange.objects.create(run=run, seq=1, path="taker.txt", kind=ChangeKind.WRITE)
    Run.objects.filter(pk=run.pk).update(lease_owner="worker-2", journal_seq=1)
    mine = WorkspaceChange(run=run, seq=0, path="frozen.txt", kind=ChangeKind.WRITE)

    with pytest.raises(LeaseLost), fenced_run(stale, "worker-1") as w:
        changes_write([mine], w)
        w.set(final_response="never")

    assert list(WorkspaceChange.objects.filter(run=run).values_list("path", flat=True)) == [
        "taker.txt"
    ]
    assert Run.objects.get(pk=run.pk).final_response == ""


def test_a_collision_while_the_lease_holds_is_not_taken_for_a_lost_lease(owner):
    run = held(advance(make_run(owner), RunStatus.RUNNING), "worker-1")
    WorkspaceChange.objects.create(run=run, seq=1, path="a.txt", kind=ChangeKind.WRITE)
    again = WorkspaceChange(run=run, seq=0, path="b.txt", kind=ChangeKind.WRITE)
    with pytest.raises(IntegrityError), fenced_run(run, "worker-1") as w:
        changes_write([again], w)
