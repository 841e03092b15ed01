"""Queueing Celery work by pinned task name, once the current transaction commits.

Domain modules never import `agents_app.tasks` (the tasks import the domain): they name the
task here. The names are pinned (`@shared_task(name=...)`) and keep the module paths they had
before the packages existed, so messages already queued by an older release still find their
task during a rolling upgrade.
"""

from enum import StrEnum
from functools import partial
from typing import Any

from celery import current_app
from django.db import transaction


class TaskName(StrEnum):
    EXECUTE_RUN = "agents_app.tasks.execute_run"
    DELIVER_WEBHOOK = "agents_app.tasks.deliver_webhook"
    EXPIRE_APPROVAL = "agents_app.tasks.expire_approval"


def send(task: TaskName, *args: Any, countdown: float | None = None) -> None:
    """Queue `task` now (to the default queue, CELERY_QUEUE)."""
    current_app.send_task(task, args=args, countdown=countdown)


def send_on_commit(task: TaskName, *args: Any, countdown: float | None = None) -> None:
    """Queue `task` once the current transaction commits: a worker must find the rows the
    caller wrote. Outside a transaction it is queued at once."""
    transaction.on_commit(partial(send, task, *args, countdown=countdown))
