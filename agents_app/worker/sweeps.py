"""What every Celery worker does besides running tasks: timers in its main process that decide
overdue approvals and take over runs whose worker died.

Each approval with a timeout sends itself a countdown message (`tasks.expire_approval`). A
broker can lose that message, and with Redis a worker that dies holding it returns it only after
the visibility timeout. The same holds for the message of a run whose worker died mid-run. So
every worker also sweeps on timers; both sweeps are idempotent (an approval is decided under
the run's lock, an expired lease is cleared by one conditional UPDATE), so many workers
sweeping is harmless.
"""

import logging

from celery import bootsteps
from django.conf import settings

from agents_app.approvals.decisions import approvals_expire_due
from agents_app.runs.admission import admit_everyone
from agents_app.runs.control import leases_expired_requeue

logger = logging.getLogger(__name__)


def sweep_approvals() -> None:
    try:
        expired = approvals_expire_due()
    except Exception:  # a database blip: the next tick tries again; the timer must live on
        logger.exception("the approval sweep failed")
        return
    if expired:
        logger.info("decided %d overdue approval(s): %s", len(expired), expired)


def sweep_leases() -> None:
    try:
        queued = leases_expired_requeue()
        # Runs waiting their turn whose person has turns free: a worker that died between a
        # run's end and letting the next go left them (runs.admission).
        admitted = admit_everyone()
    except Exception:  # as above
        logger.exception("the lease sweep failed")
        return
    if queued:
        logger.warning(
            "queued %d run(s) again whose worker stopped renewing: %s", len(queued), queued
        )
    if admitted:
        logger.info("let %d run(s) waiting their turn go: %s", len(admitted), admitted)


class Sweeps(bootsteps.StartStopStep):
    requires = {"celery.worker.components:Timer"}

    def __init__(self, worker, **kwargs):
        super().__init__(worker, **kwargs)
        self.timers = []

    def start(self, worker) -> None:
        for interval, sweep in [
            (settings.APPROVAL_SWEEP_INTERVAL, sweep_approvals),
            (settings.LEASE_SWEEP_INTERVAL, sweep_leases),
        ]:
            if interval > 0:
                self.timers.append(worker.timer.call_repeatedly(interval, sweep, priority=10))

    def stop(self, worker) -> None:
        for timer in self.timers:
            timer.cancel()
        self.timers = []
