"""A worker process keeps its database connection across its tasks, as Django keeps a web
process's across requests with CONN_MAX_AGE: a new connection for every run cost PostgreSQL a
server process and a login, and SQLite a reopening of its file, each time.

Celery's Django fixup closes every connection before and after every task unless
CELERY_DB_REUSE_MAX is set (config/settings.py sets it). Instead, as Django does around a
request, each task starts and ends with `close_old_connections`, which closes a connection only
when it is unusable (an error since its last commit, and it fails a check) or older than
WORKER_DATABASE_CONN_MAX_AGE seconds. The web processes keep DATABASE_CONN_MAX_AGE (0 by
default): under ASGI, Django asks for no persistent connections.
"""

from typing import Any

from django.conf import settings
from django.db import close_old_connections, connections


def keep_connections(**kwargs: Any) -> None:
    """This process executes runs: its connections live up to WORKER_DATABASE_CONN_MAX_AGE
    seconds from now on (on `worker_init`, before a prefork worker forks its children)."""
    for alias in connections:
        connections.settings[alias]["CONN_MAX_AGE"] = settings.WORKER_DATABASE_CONN_MAX_AGE


def close_old(sender: Any = None, **kwargs: Any) -> None:
    """Around each task (`task_prerun`, `task_postrun`): what Django does around a request.
    Not for a task applied in the caller's own process (`apply`, eager): its connection is the
    caller's, maybe inside the caller's transaction (Celery's fixup leaves those alone too)."""
    if getattr(getattr(sender, "request", None), "is_eager", False):
        return
    close_old_connections()
