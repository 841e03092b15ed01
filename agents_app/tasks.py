"""Celery tasks: an id in, one call, the retry policy. No ORM writes here.

The top of the house: tasks import the domain, never the reverse. Domain code queues them by
their pinned names (`core.dispatch.TaskName`).
"""

import logging

from celery import shared_task
from celery.signals import (
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
    worker_ready,
)
from django.db import DatabaseError, transaction

from agents_app.approvals.decisions import approval_expire
from agents_app.core import task_metrics
from agents_app.core.dispatch import TaskName
from agents_app.runs.control import runs_recover
from agents_app.webhooks.services import webhook_deliver
from agents_app.worker.connections import close_old, keep_connections
from agents_app.worker.execution import execute_run as run_execute
from agents_app.worker.mcp_startup import on_worker_process_init, on_worker_ready
from agents_app.worker.sweeps import sweep_approvals

logger = logging.getLogger(__name__)

# Both tasks take an id and keep their state in rows: a delivery lost with its worker is
# delivered again (acks_late, reject_on_worker_lost), a database blip is retried with backoff.
DURABLE = {
    "bind": True,
    "acks_late": True,
    "reject_on_worker_lost": True,
    "autoretry_for": (DatabaseError,),
    "retry_backoff": True,
    "retry_backoff_max": 60,
    "max_retries": None,
    "ignore_result": True,
}


@shared_task(name=TaskName.EXECUTE_RUN, **DURABLE)
def execute_run(self, run_id: int) -> str:
    outcome = run_execute(run_id)
    if outcome.state == "busy":
        # Another worker holds a live lease: come back when it would expire. If that worker
        # died, this delivery takes the run over; if it finishes, this one finds it done.
        raise self.retry(countdown=outcome.retry_in, max_retries=None)
    return outcome.state


@shared_task(name=TaskName.DELIVER_WEBHOOK, **DURABLE)
def deliver_webhook(self, delivery_id: int) -> str:
    outcome = webhook_deliver(delivery_id)
    if outcome.state == "retry":
        # The attempt count lives in the row, which also decides when to give up.
        raise self.retry(countdown=outcome.retry_in, max_retries=None)
    return outcome.state


@shared_task(name=TaskName.EXPIRE_APPROVAL, **DURABLE)
def expire_approval(self, approval_id: int) -> str:
    remaining = approval_expire(approval_id)
    if remaining > 0:
        # Delivered early (a broker redelivery, a clock skew): wait for the rest.
        raise self.retry(countdown=remaining, max_retries=None)
    return "done"


# Every process that receives or runs these tasks counts them for Prometheus, in the Redis all
# of them share (core.task_metrics), so /metrics sees every worker on every machine.
task_metrics.connect()

# A worker's processes keep their database connection from task to task (worker.connections).
worker_init.connect(keep_connections)
task_prerun.connect(close_old)
task_postrun.connect(close_old)

# Every process that executes runs connects to the MCP servers as it starts (worker.mcp_startup).
worker_process_init.connect(on_worker_process_init)
worker_ready.connect(on_worker_ready)


@worker_ready.connect
def recover_runs_on_start(**kwargs) -> None:
    """A worker coming up queues the runs nobody holds, so none waits forever for a message
    that was lost (e.g. a Redis restarted without persistence)."""
    with transaction.atomic():
        recovered = runs_recover()
    if recovered:
        logger.info("queued %d run(s) that no worker held: %s", len(recovered), recovered)
    sweep_approvals()
