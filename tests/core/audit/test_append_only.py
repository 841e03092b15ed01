"""An AuditEvent is written once: nothing in the product changes or deletes it."""

import pytest

from agents_app.core.audit import audit_record
from agents_app.models import AuditEvent, AuditLogIsAppendOnly, Run
from tests.support.runs import make_run


@pytest.fixture
def event(owner):
    return audit_record(
        action="run.cancel", interface="api", actor=owner, run=make_run(owner), details={"a": 1}
    )


def test_audit_record_fills_in_the_actor_label_and_the_run(owner, event):
    assert (event.actor, event.actor_label, event.interface) == (owner, "owner", "api")
    assert event.run_id == Run.objects.get().pk
    assert event.created_at is not None


def test_without_an_actor_the_worker_and_the_system_are_named(db):
    worker = audit_record(action="llm.call", interface="worker")
    system = audit_record(action="mcp_server.check", interface="admin")

    assert (worker.actor, worker.actor_label) == (None, "worker")
    assert (system.actor, system.actor_label) == (None, "system")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"action": "run.cancel", "interface": "cli"},
        {"action": "", "interface": "api"},
        {"action": "run.cancel", "interface": "api", "run_id": 999_999, "run": "made"},
    ],
)
def test_audit_record_refuses_what_would_be_silently_wrong(owner, kwargs):
    if kwargs.get("run") == "made":
        kwargs["run"] = make_run(owner)

    with pytest.raises(ValueError):
        audit_record(**kwargs)

    assert not AuditEvent.objects.exists()


def test_an_anonymous_actor_is_refused(db):
    from django.contrib.auth.models import AnonymousUser

    with pytest.raises(ValueError):
        audit_record(action="run.cancel", interface="web", actor=AnonymousUser())


def test_saving_a_changed_event_is_refused(event):
    event.target = "rewritten"

    with pytest.raises(AuditLogIsAppendOnly):
        event.save()

    assert AuditEvent.objects.get().target == ""


def test_saving_with_an_existing_primary_key_cannot_overwrite_that_row(event):
    with pytest.raises(AuditLogIsAppendOnly):
        AuditEvent(pk=event.pk, action="forged", interface="web", actor_label="x").save()

    assert AuditEvent.objects.get().action == "run.cancel"


def test_deleting_an_event_is_refused(event):
    with pytest.raises(AuditLogIsAppendOnly):
        event.delete()

    assert AuditEvent.objects.count() == 1


def test_updating_through_a_queryset_is_refused(event):
    with pytest.raises(AuditLogIsAppendOnly):
        AuditEvent.objects.filter(pk=event.pk).update(action="forged")
    with pytest.raises(AuditLogIsAppendOnly):
        AuditEvent.objects.all().update(action="forged")
    event.action = "forged"
    with pytest.raises(AuditLogIsAppendOnly):
        AuditEvent.objects.bulk_update([event], ["action"])

    assert AuditEvent.objects.get().action == "run.cancel"


def test_deleting_through_a_queryset_is_refused(event):
    with pytest.raises(AuditLogIsAppendOnly):
        AuditEvent.objects.all().delete()
    with pytest.raises(AuditLogIsAppendOnly):
        AuditEvent.objects.filter(pk=event.pk).delete()

    assert AuditEvent.objects.count() == 1


@pytest.mark.dialect
def test_an_upsert_is_refused(event):
    with pytest.raises(AuditLogIsAppendOnly):
        AuditEvent.objects.bulk_create(
            [AuditEvent(pk=event.pk, action="forged", interface="web", actor_label="x")],
            update_conflicts=True,
            update_fields=["action"],
            unique_fields=["id"],
        )
    with pytest.raises(AuditLogIsAppendOnly):
        AuditEvent.objects.update_or_create(pk=event.pk, defaults={"action": "forged"})

    assert AuditEvent.objects.get().action == "run.cancel"


@pytest.mark.dialect
def test_deleting_the_run_keeps_its_events_and_their_run_number(owner, event):
    run_id = event.run_id

    Run.objects.filter(pk=run_id).delete()

    kept = AuditEvent.objects.get()
    assert kept.run_id == run_id
    with pytest.raises(Run.DoesNotExist):
        kept.run  # noqa: B018


@pytest.mark.dialect
def test_deleting_the_user_keeps_the_event_and_the_name(owner, event):
    owner.delete()  # cascades to the user's tasks and runs as well

    kept = AuditEvent.objects.get()
    assert (kept.actor, kept.actor_label) == (None, "owner")
    assert kept.run_id == event.run_id
