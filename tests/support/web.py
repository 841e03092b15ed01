"""A real daphne serving the app from the test database, as `uv run go` does, with DEBUG off."""

import subprocess
import sys
from pathlib import Path

import httpx

from config.env import BASE_DIR
from tests.support.processes import ManagedProcess, free_port
from tests.support.worker import worker_environment

PRODUCTION_LIKE = {"DEBUG": "false", "SECRET_KEY": "browser-tests-" + "x" * 40}

# The VAR_DIRs whose static files this process collected: every stack of a test process shares
# one, and the files do not change during a test session (collecting and compressing them takes
# some 6 s of processor time).
_collected: set[str] = set()


class WebServer(ManagedProcess):
    def __init__(self, log_dir: Path, **env: str):
        super().__init__(
            "daphne", log_dir / "daphne.log", worker_environment(**{**PRODUCTION_LIKE, **env})
        )
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    # 90 s, not 30: when a test run begins, the integration tests of all four test processes
    # start their workers, web servers and browsers at once on two cores, and one process's
    # imports alone take about 5 s of CPU; a process that never comes up still fails.
    def start(self, timeout: float = 90.0) -> "WebServer":
        # Like `go`: hashed static files collected first, served by whitenoise with DEBUG off.
        if self.env["VAR_DIR"] not in _collected:
            subprocess.run(
                [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
                cwd=BASE_DIR,
                env=self.env,
                check=True,
            )
            _collected.add(self.env["VAR_DIR"])
        self.spawn(
            [
                sys.executable,
                "-m",
                "daphne",
                "-b",
                "127.0.0.1",
                "-p",
                str(self.port),
                "config.asgi:application",
            ],
            ready=self.serving,
            timeout=timeout,
        )
        return self

    def serving(self) -> bool:
        try:
            # The health check itself waits a second for worker pings.
            httpx.get(f"{self.url}/api/v1/health", timeout=5)
        except httpx.HTTPError:
            return False
        return True
