"""What every Celery worker does besides running tasks: a timer that decides overdue approvals.

Each approval with a timeout sends itself a countdown message (`tasks.expire_approval`). A
broker can lose that message, and with Redis a worker that dies holding it returns it only after
the visibility timeout. So every worker also sweeps on a timer in its main process; deciding is
idempotent under the run's lock, so many workers sweeping is harmless (one decides, the others
find it decided).
"""

import logging

from celery import bootsteps
from django.conf import settings

from agents_app.approvals.decisions import approvals_expire_due

logger = logging.getLogger(__name__)


def sweep_approvals() -> None:
    try:
        expired = approvals_expire_due()
    except Exception:  # a database blip: the next tick tries again; the timer must live on
        logger.exception("the approval sweep failed")
        return
    if expired:
        logger.info("decided %d overdue approval(s): %s", len(expired), expired)


class ApprovalSweep(bootsteps.StartStopStep):
    requires = {"celery.worker.components:Timer"}

    def __init__(self, worker, **kwargs):
        super().__init__(worker, **kwargs)
        self.timer_ref = None

    def start(self, worker) -> None:
        interval = settings.APPROVAL_SWEEP_INTERVAL
        if interval > 0:
            self.timer_ref = worker.timer.call_repeatedly(interval, sweep_approvals, priority=10)

    def stop(self, worker) -> None:
        if self.timer_ref is not None:
            self.timer_ref.cancel()
            self.timer_ref = None
