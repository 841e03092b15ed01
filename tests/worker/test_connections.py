"""A worker process keeps its database connection from task to task (worker.connections), as
Django keeps a web process's from request to request, and drops one that is unusable."""

import pytest
from celery.signals import task_postrun, task_prerun, worker_init
from django.db import connection, connections

import agents_app.tasks  # (connects the worker's signals, as a worker imports it)
from agents_app.worker.connections import close_old, keep_connections
from config.celery import app

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def a_worker_process(settings):
    """This process as a worker: its connections kept WORKER_DATABASE_CONN_MAX_AGE seconds."""
    before = {
        alias: (
            connections.settings[alias]["CONN_MAX_AGE"],
            dict(connections.settings[alias]["OPTIONS"]),
        )
        for alias in connections
    }
    settings.WORKER_DATABASE_CONN_MAX_AGE = 300
    keep_connections()
    connection.close()  # the next one is opened with the worker's lifetime
    yield
    connection.close()
    if connection.vendor != "sqlite":
        connection.close_pool()  # PostgreSQL: the worker's pool (worker.connections)
    for alias, (max_age, options) in before.items():
        connections.settings[alias]["CONN_MAX_AGE"] = max_age
        connections.settings[alias]["OPTIONS"].clear()
        connections.settings[alias]["OPTIONS"].update(options)


def a_task_queries() -> object:
    """What a task does to the connection (close_old around it), and the connection it used."""
    close_old()
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    used = connection.connection
    close_old()
    return used


def test_a_worker_is_wired_to_keep_its_connection_and_celery_leaves_it_alone():
    assert keep_connections in [ref() for _, ref in worker_init.receivers]
    assert close_old in [ref() for _, ref in task_prerun.receivers]
    assert close_old in [ref() for _, ref in task_postrun.receivers]
    # Without it, Celery's Django fixup closes every connection around every task.
    assert app.conf.get("CELERY_DB_REUSE_MAX") >= 100


@pytest.mark.dialect
def test_a_worker_uses_one_connection_for_task_after_task(a_worker_process):
    first = a_task_queries()
    assert first is not None
    if connection.vendor == "sqlite":
        assert a_task_queries() is first
        assert a_task_queries() is first
        return
    # On PostgreSQL a task takes a connection from the worker's pool and gives it back: no
    # task opens one of its own.
    opened = connection.pool.get_stats()["connections_num"]
    a_task_queries()
    a_task_queries()
    assert connection.pool.get_stats()["connections_num"] == opened


@pytest.mark.dialect
def test_a_connection_that_broke_is_replaced_at_the_next_task(a_worker_process, monkeypatch):
    if connection.vendor == "sqlite":
        first = a_task_queries()
        connection.errors_occurred = True  # an error since the last commit...
        monkeypatch.setattr(connection, "is_usable", lambda: False)  # ...and its check fails
        assert a_task_queries() is not first
        return
    # PostgreSQL: the connection breaks during a task (the server closed it); the task's end
    # gives it back to the worker's pool, which drops it, and the next task gets another.
    close_old()
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    broken = connection.connection
    broken.close()
    connection.errors_occurred = True
    close_old()
    assert a_task_queries() is not broken


@pytest.mark.dialect
def test_without_it_each_task_gets_a_new_connection():
    """The web processes' rule (DATABASE_CONN_MAX_AGE 0): the control for the tests above."""
    first = a_task_queries()
    assert a_task_queries() is not first


@pytest.mark.dialect
def test_a_task_applied_in_this_process_leaves_its_connection_alone():
    """`apply` (eager) runs the task in the caller's process, maybe in its transaction."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    used = connection.connection
    assert agents_app.tasks.expire_approval.apply(args=[0]).successful()
    assert connection.connection is used
