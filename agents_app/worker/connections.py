"""A worker process's database connections: kept from task to task, and on PostgreSQL, at most
WORKER_DATABASE_CONNECTIONS of them whatever the number of runs in flight.

A worker runs many runs at once, each in a thread (docs/ARCHITECTURE.md), and Django gives each
thread its own connection. On PostgreSQL that would be a server process per run in flight, and
PostgreSQL's default max_connections (100) would not serve one busy worker. So a worker's
connections come from one pool per process (Django's psycopg pool, WORKER_DATABASE_CONNECTIONS),
and a run gives its connection back whenever it is about to wait (`give_back`: before a model
request, after each commit): a connection is held for a transaction, never for a model's answer.
SQLite connections are files, not server processes: each thread keeps its own (and the writers
of a process take turns, config/sqlite).

Celery's Django fixup closes every connection before and after every task unless
CELERY_DB_REUSE_MAX is set (config/settings.py sets it). Instead, as Django does around a
request, each task starts and ends with `close_old_connections`, which closes a connection only
when it is unusable (an error since its last commit, and it fails a check) or older than
WORKER_DATABASE_CONN_MAX_AGE seconds (pooled: hands it back to the pool). The web processes keep
DATABASE_CONN_MAX_AGE (0 by default): under ASGI, Django asks for no persistent connections.
"""

import os
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, close_old_connections, connections

POSTGRESQL = ("django.db.backends.postgresql", "config.postgresql")  # Django's, and ours


def keep_connections(**kwargs: Any) -> None:
    """This process executes runs (on `worker_init`, before a prefork worker forks its
    children): on PostgreSQL its connections come from a pool of WORKER_DATABASE_CONNECTIONS,
    elsewhere they live up to WORKER_DATABASE_CONN_MAX_AGE seconds."""
    connections.close_all()  # none opened before may be handed to the pool
    for alias in connections:
        options = connections.settings[alias].setdefault("OPTIONS", {})
        if connections.settings[alias]["ENGINE"] in POSTGRESQL:
            connections.settings[alias]["CONN_MAX_AGE"] = 0  # the pool keeps them instead
            options["pool"] = {
                "min_size": 1,
                "max_size": settings.WORKER_DATABASE_CONNECTIONS,
                "timeout": settings.WORKER_DATABASE_POOL_WAIT,
                "max_lifetime": max(60, settings.WORKER_DATABASE_CONN_MAX_AGE),
                "name": "agentdesk-worker",
            }
            # Which process holds which connections, in pg_stat_activity.
            options.setdefault("application_name", f"agentdesk worker {os.getpid()}")
        else:
            connections.settings[alias]["CONN_MAX_AGE"] = settings.WORKER_DATABASE_CONN_MAX_AGE


def pooled() -> bool:
    return bool(connections.settings[DEFAULT_DB_ALIAS].get("OPTIONS", {}).get("pool"))


def give_back() -> None:
    """Before a wait: this thread's connection goes back to the process's pool, if it has one
    and no transaction is open (a test's, or a caller's)."""
    connection = connections[DEFAULT_DB_ALIAS]
    if connection.connection is not None and not connection.in_atomic_block and pooled():
        connection.close()


def close_old(sender: Any = None, **kwargs: Any) -> None:
    """Around each task (`task_prerun`, `task_postrun`): what Django does around a request.
    Not for a task applied in the caller's own process (`apply`, eager): its connection is the
    caller's, maybe inside the caller's transaction (Celery's fixup leaves those alone too)."""
    if getattr(getattr(sender, "request", None), "is_eager", False):
        return
    close_old_connections()
