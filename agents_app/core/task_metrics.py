"""Celery task metrics for Prometheus, added up across every worker process in Redis.

Workers are other processes, on any number of machines, and each prefork worker forks
children that come and go: counters kept in a process's memory would be seen by nobody that
scrapes the web server. So every worker process adds to hashes in the Redis all of them already
share (the broker's, `CELERY_BROKER_URL`), under `METRICS_REDIS_PREFIX`, from Celery's signals:

- `task_received` (in the worker's main process, as a message arrives): `received`;
- `task_success`, `task_failure`, `task_retry` (in the process that ran the task): `succeeded`,
  `failed`, `retried`;
- `task_prerun` / `task_postrun` (the same process): the runtime, into a histogram's buckets.

One pipelined `MULTI` per signal: `HINCRBY` and `HINCRBYFLOAT` are atomic, so any number of
processes add at once without losing a count. The web process reads the hashes when Prometheus
scrapes (`TaskMetricsCollector`), whichever daphne answers. A Redis that restarts without
persistence starts the counters from zero, which Prometheus reads as a counter reset. A Redis
that cannot be reached loses the counts of that moment, never the task: a signal handler only
logs.

`connect()` is called where the tasks are defined (agents_app/tasks.py), so every process that
imports them, worker or not, records what it runs; a task run with `apply()` is recorded as
well (it has no `received`: no message arrived).
"""

import logging
import time
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import redis
from celery.signals import (
    task_failure,
    task_postrun,
    task_prerun,
    task_received,
    task_retry,
    task_success,
)
from django.conf import settings
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

logger = logging.getLogger(__name__)

STATES = ("received", "succeeded", "failed", "retried")
# Seconds. A webhook delivery takes milliseconds, a run's execution up to AGENT_RUN_TIMEOUT.
BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 1800.0)
_SEPARATOR = "|"  # task names are dotted Python paths: never in one

# task id → when task_prerun saw it start, in the process that runs it: a stack, since a task
# run with apply() that retries runs again inside its own run, under the same id.
_started: dict[str, list[float]] = {}


def _keys() -> tuple[str, str]:
    prefix = settings.METRICS_REDIS_PREFIX
    return f"{prefix}:celery:tasks", f"{prefix}:celery:runtime"


@lru_cache(maxsize=4)
def _client(url: str) -> redis.Redis:
    # redis-py's pool notices a fork and opens new connections in the child.
    return redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)


def _redis() -> redis.Redis:
    return _client(settings.CELERY_BROKER_URL)


def count(task: str, state: str) -> None:
    """Add one to `task`'s count of `state` (one of STATES)."""
    tasks_key, _ = _keys()
    try:
        _redis().hincrby(tasks_key, f"{task}{_SEPARATOR}{state}", 1)
    except redis.RedisError as error:
        logger.warning("task metrics: could not count %s %s: %s", task, state, error)


def observe(task: str, seconds: float) -> None:
    """Add one runtime of `task` to its histogram."""
    _, runtime_key = _keys()
    field = f"{task}{_SEPARATOR}"
    try:
        with _redis().pipeline(transaction=True) as pipe:
            pipe.hincrby(runtime_key, field + "count", 1)
            pipe.hincrbyfloat(runtime_key, field + "sum", seconds)
            for bound in BUCKETS:
                if seconds <= bound:
                    pipe.hincrby(runtime_key, f"{field}le{_SEPARATOR}{bound}", 1)
            pipe.execute()
    except redis.RedisError as error:
        logger.warning("task metrics: could not record %s's runtime: %s", task, error)


# --- Celery's signals --------------------------------------------------------------------


def _on_received(request: Any = None, **kwargs: Any) -> None:
    if request is not None:
        count(request.name, "received")


def _on_success(sender: Any = None, **kwargs: Any) -> None:
    count(sender.name, "succeeded")


def _on_failure(sender: Any = None, **kwargs: Any) -> None:
    count(sender.name, "failed")


def _on_retry(sender: Any = None, **kwargs: Any) -> None:
    count(sender.name, "retried")


def _on_prerun(task_id: str = "", **kwargs: Any) -> None:
    _started.setdefault(task_id, []).append(time.monotonic())


def _on_postrun(task_id: str = "", task: Any = None, **kwargs: Any) -> None:
    stack = _started.get(task_id)
    if not stack:
        return
    started = stack.pop()
    if not stack:
        del _started[task_id]
    if task is not None:
        observe(task.name, time.monotonic() - started)


_HANDLERS = (
    (task_received, _on_received),
    (task_success, _on_success),
    (task_failure, _on_failure),
    (task_retry, _on_retry),
    (task_prerun, _on_prerun),
    (task_postrun, _on_postrun),
)


def connect() -> None:
    """Record every task this process receives or runs (idempotent)."""
    for signal, handler in _HANDLERS:
        signal.connect(handler, weak=False, dispatch_uid=f"task_metrics.{handler.__name__}")


# --- Reading, for Prometheus ---------------------------------------------------------------


def snapshot() -> tuple[dict[tuple[str, str], int], dict[str, dict[str, float]]]:
    """What every process recorded: counts by (task, state), and by task the runtime's
    `count`, `sum` and cumulative buckets (`le|<bound>`). Raises redis.RedisError."""
    tasks_key, runtime_key = _keys()
    with _redis().pipeline(transaction=False) as pipe:
        pipe.hgetall(tasks_key)
        pipe.hgetall(runtime_key)
        raw_counts, raw_runtimes = pipe.execute()
    counts: dict[tuple[str, str], int] = {}
    for field, value in raw_counts.items():
        task, _, state = field.decode().rpartition(_SEPARATOR)
        counts[(task, state)] = int(value)
    runtimes: dict[str, dict[str, float]] = {}
    for field, value in raw_runtimes.items():
        task, _, rest = field.decode().partition(_SEPARATOR)
        runtimes.setdefault(task, {})[rest] = float(value)
    return counts, runtimes


class TaskMetricsCollector(Collector):
    """The Celery task counters and runtimes every worker recorded, read at scrape time."""

    def collect(self) -> Iterator[Any]:
        available = GaugeMetricFamily(
            "agentdesk_celery_task_metrics_available",
            "Whether the Celery task metrics could be read from Redis (1) or not (0).",
        )
        try:
            counts, runtimes = snapshot()
        except redis.RedisError as error:
            logger.warning("task metrics: could not read Redis: %s", error)
            available.add_metric([], 0)
            yield available
            return
        available.add_metric([], 1)
        yield available

        tasks = CounterMetricFamily(
            "agentdesk_celery_tasks",
            "Celery tasks received, succeeded, failed and retried, by task name.",
            labels=["task", "state"],
        )
        for (task, state), value in sorted(counts.items()):
            tasks.add_metric([task, state], value)
        yield tasks

        runtime = HistogramMetricFamily(
            "agentdesk_celery_task_runtime_seconds",
            "How long Celery tasks ran, by task name.",
            labels=["task"],
        )
        for task, fields in sorted(runtimes.items()):
            buckets = [
                (floatToGoString(bound), fields.get(f"le{_SEPARATOR}{bound}", 0.0))
                for bound in BUCKETS
            ]
            buckets.append(("+Inf", fields.get("count", 0.0)))
            runtime.add_metric([task], buckets, sum_value=fields.get("sum", 0.0))
        yield runtime
