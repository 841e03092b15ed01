"""A real Celery worker in its own process group, pointed at the test database."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dj_database_url
from django.conf import settings
from django.db import connection

from config.env import BASE_DIR


def test_database_url() -> str:
    """The URL of the database the tests are using (pytest-django's test database)."""
    db = connection.settings_dict
    if db["ENGINE"] == "django.db.backends.sqlite3":
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
            "CELERY_VISIBILITY_TIMEOUT": "4",
            "CELERY_RESTORE_INTERVAL": "1",
            "LLM_RETRY_BASE_DELAY": "0.05",
            "DEBUG": "true",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(overrides)
    return env


class Worker:
    def __init__(self, name: str, log_dir: Path, **env: str):
        self.name = name
        self.log_path = log_dir / f"worker-{name}.log"
        self.env = worker_environment(**env)
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 30.0) -> "Worker":
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "--loglevel=INFO",
                "--concurrency=1",
                "--pool=prefork",
                f"--hostname={self.name}@%h",
                "--without-gossip",
                "--without-mingle",
            ],
            cwd=BASE_DIR,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"worker {self.name} exited: {self.log()[-3000:]}")
            if " ready." in self.log():
                return self
            time.sleep(0.1)
        raise RuntimeError(f"worker {self.name} not ready in {timeout} s: {self.log()[-3000:]}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kill(self) -> None:
        """SIGKILL the whole process group, as if the machine died."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def pause(self) -> None:
        """SIGSTOP the process group: the worker (and its lease renewal) freezes mid-call."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGCONT)

    def stop(self) -> None:
        if not self.process or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.kill()
