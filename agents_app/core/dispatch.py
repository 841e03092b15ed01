"""Queueing Celery work by pinned task name, once the current transaction commits.

Domain modules never import `agents_app.tasks` (the tasks import the domain): they name the
task here. The names are pinned (`@shared_task(name=...)`) and keep the module paths they had
before the packages existed, so messages already queued by an older release still find their
task during a rolling upgrade.
"""

import logging
from enum import StrEnum
from functools import partial
from typing import Any

from celery import current_app
from django.db import transaction

logger = logging.getLogger(__name__)


class TaskName(StrEnum):
    EXECUTE_RUN = "agents_app.tasks.execute_run"
    DELIVER_WEBHOOK = "agents_app.tasks.deliver_webhook"
    EXPIRE_APPROVAL = "agents_app.tasks.expire_approval"


def warm() -> None:
    """Do now what a process's first `send` would otherwise pay for, about half a second to
    a second: Celery's app finalised (its tasks imported) and a broker connection open. A web
    process calls it as it starts, in a thread, so its first task does not wait for it; a
    broker that is down is only logged, the first `send` then tries again."""
    try:
        current_app.loader.import_default_modules()
        current_app.finalize(auto=True)
        with current_app.producer_or_acquire() as producer:
            producer.connection.ensure_connection(max_retries=1)
    except Exception:
        logger.warning(
            "could not reach the broker yet; the first task will try again", exc_info=True
        )


def send(task: TaskName, *args: Any, countdown: float | None = None) -> None:
    """Queue `task` now (to the default queue, CELERY_QUEUE)."""
    current_app.send_task(task, args=args, countdown=countdown)


def send_on_commit(task: TaskName, *args: Any, countdown: float | None = None) -> None:
    """Queue `task` once the current transaction commits: a worker must find the rows the
    caller wrote. Outside a transaction it is queued at once."""
    transaction.on_commit(partial(send, task, *args, countdown=countdown))
