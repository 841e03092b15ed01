"""A real Celery worker in its own process group, pointed at the test database."""

import os
import signal
import sys
from pathlib import Path

import dj_database_url
from django.conf import settings
from django.db import connection

from config.launcher import worker_arguments
from tests.support.processes import ManagedProcess


def test_database_url() -> str:
    """The URL of the database the tests are using (pytest-django's test database)."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{Path(db['NAME']).resolve()}"
    original = os.environ.get("DATABASE_URL", "")
    parsed = dj_database_url.parse(original)
    return original.rsplit("/", 1)[0] + "/" + db["NAME"] if parsed["NAME"] else original


def worker_environment(**overrides: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "DATABASE_URL": test_database_url(),
            "REDIS_URL": settings.REDIS_URL,
            "VAR_DIR": str(settings.VAR_DIR),
            "WORKSPACE_ROOT": str(settings.WORKSPACE_ROOT),
            "RUN_LEASE_SECONDS": "3",
            # Longer than any task of a test takes on a busy machine: Redis delivers a message
            # again once it has been unacknowledged this long, even while its task still runs,
            # and a second delivery arriving just after the run parked holds the parked run's
            # lease for a moment. Tests of a takeover give the worker that takes over 4 s.
            "CELERY_VISIBILITY_TIMEOUT": "60",
            # A takeover is what a test is about, not a timer's side effect: tests of the lease
            # sweep turn it on.
            "LEASE_SWEEP_INTERVAL": "0",
            "CELERY_RESTORE_INTERVAL": "1",
            "LLM_RETRY_BASE_DELAY": "0.05",
            "DEBUG": "true",
            "PYTHONUNBUFFERED": "1",
            # Celery runs Django's system checks when a worker starts (its Django fixup), about
            # a second of processor time for each of the suite's ~60 workers; the checks have
            # their own tests and CI's deploy check, and `go`'s workers still run them.
            "CELERY_SKIP_CHECKS": "true",
        }
    )
    env.update(overrides)
    return env


class Worker(ManagedProcess):
    def __init__(self, name: str, log_dir: Path, *, concurrency: int = 8, **env: str):
        super().__init__(
            f"worker {name}", log_dir / f"worker-{name}.log", worker_environment(**env)
        )
        self.hostname = name
        self.concurrency = concurrency

    # 90 s, not 30: when a test run begins, the integration tests of all four test processes
    # start their workers, web servers and browsers at once on two cores, and one process's
    # imports alone take about 5 s of CPU; a process that never comes up still fails.
    def start(self, timeout: float = 90.0) -> "Worker":
        self.spawn(
            [
                sys.executable,
                # As `go` starts its worker: its pool, its concurrency (a few runs at once).
                *worker_arguments("threads", self.concurrency, f"{self.hostname}@%h"),
                "--without-gossip",
                "--without-mingle",
            ],
            ready=lambda: " ready." in self.log(),
            timeout=timeout,
        )
        return self

    def pause(self) -> None:
        """SIGSTOP the process group: the worker (and its lease renewal) freezes mid-call."""
        self.signal_group(signal.SIGSTOP)

    def resume(self) -> None:
        self.signal_group(signal.SIGCONT)


def worker_idle() -> bool:
    """Nothing left for a worker: no run queued, executing or leased, no webhook to deliver.
    (Parked runs wait for a person or the kill switch; finished ones are done.)"""
    from django.db.models import Q

    from agents_app.models import ACTIVE_STATUSES, Run, WebhookDelivery

    busy = Run.objects.filter(Q(status__in=ACTIVE_STATUSES) | ~Q(lease_owner=""))
    return not busy.exists() and not WebhookDelivery.objects.filter(status="pending").exists()
