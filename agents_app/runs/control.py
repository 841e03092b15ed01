"""Control over all runs: the kill switch (engage, release, refuse new work while engaged)
and recovery of runs no worker holds."""

from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from agents_app.core.audit import KILL_SWITCH_ENGAGE, KILL_SWITCH_RELEASE, audit_record
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.prepared import Prepared
from agents_app.core.watch import signal_kill_switch
from agents_app.models import (
    ACTIVE_STATUSES,
    KillSwitch,
    Run,
    RunStatus,
)
from agents_app.runs.lifecycle import run_enqueue
from agents_app.runs.writer import locked_run

# Read at every submission and every run's start: compiled once (core.prepared).
_ENGAGED = Prepared(lambda: KillSwitch.objects.filter(pk=1, engaged=True), samples=())


def engaged_switch() -> KillSwitch | None:
    """The kill switch while it is engaged, else None."""
    return _ENGAGED.one()


def refuse_while_halted() -> None:
    """Raises DomainError SERVICE_UNAVAILABLE while the kill switch is engaged."""
    switch = engaged_switch()
    if switch is not None:
        raise DomainError(
            ErrorCode.SERVICE_UNAVAILABLE,
            "The kill switch is engaged: no run starts until staff release it",
            {"kill_switch": "engaged", "reason": switch.reason},
        )


@transaction.atomic
def kill_switch_set(*, engaged: bool, actor: Any, interface: str, reason: str = "") -> KillSwitch:
    """Engage or release the kill switch. Engaged, every run pauses at its next step boundary
    and no run starts; released, each paused run goes back to where it was and is queued.
    Returns the switch."""
    switch = KillSwitch.objects.select_for_update().filter(pk=1).first() or KillSwitch(pk=1)
    was = switch.engaged
    switch.engaged = engaged
    switch.reason = reason if engaged else switch.reason
    switch.changed_by = actor
    switch.changed_at = timezone.now()
    switch.save()
    signal_kill_switch()
    resumed = []
    if was and not engaged:
        for run_id in Run.objects.filter(status=RunStatus.PAUSED).values_list("pk", flat=True):
            with locked_run(run_id) as w:
                # A run a person paused stays paused until they resume it.
                if w.run.status != RunStatus.PAUSED or w.run.pause_requested:
                    continue
                w.transition(w.run.resume_status or RunStatus.QUEUED, reason="kill switch released")
                w.set(resume_status="")
            run_enqueue(run_id=run_id)
            resumed.append(run_id)
    audit_record(
        action=KILL_SWITCH_ENGAGE if engaged else KILL_SWITCH_RELEASE,
        interface=interface,
        actor=actor,
        target="kill switch",
        details={"reason": reason, "was_engaged": was, "resumed_runs": resumed},
    )
    return switch


def runs_recover() -> list[int]:
    """Queue again every active run that no worker holds (no lease, or an expired one): its
    message may have been lost with a Redis that kept nothing. A run whose message still exists
    is then delivered twice, which the lease makes harmless. Returns the ids queued."""
    now = timezone.now()
    orphans = list(
        Run.objects.filter(status__in=ACTIVE_STATUSES, waiting_turn=False)
        .filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lte=now))
        .values_list("pk", flat=True)
    )
    for run_id in orphans:
        run_enqueue(run_id=run_id)
    return orphans


def leases_expired_requeue() -> list[int]:
    """Queue again, once each, the active runs whose worker stopped renewing its lease (it died,
    or froze). Their message is held unacknowledged by that worker until Redis's visibility
    timeout; without this a live worker would take such a run over only when it starts.

    The expired lease is cleared in the same conditional UPDATE that picks the run, so many
    workers sweeping at once queue it once, and a frozen worker that wakes up finds its lease
    gone (its renewals fail, its writes are fenced off). Returns the ids queued."""
    now = timezone.now()
    expired = (
        Run.objects.filter(status__in=ACTIVE_STATUSES, lease_expires_at__lte=now)
        .exclude(lease_owner="")
        .values_list("pk", "lease_owner")
    )
    queued = []
    for run_id, owner in list(expired):
        with transaction.atomic():  # the message goes out once the lease is cleared
            cleared = Run.objects.filter(
                pk=run_id, lease_owner=owner, lease_expires_at__lte=now
            ).update(lease_owner="", lease_expires_at=None)
            if cleared:
                run_enqueue(run_id=run_id)
                queued.append(run_id)
    return queued
