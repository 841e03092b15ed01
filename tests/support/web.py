"""A real daphne serving the app from the test database, as `uv run go` does, with DEBUG off."""

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from config.env import BASE_DIR
from tests.support.worker import worker_environment

PRODUCTION_LIKE = {"DEBUG": "false", "SECRET_KEY": "browser-tests-" + "x" * 40}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebServer:
    def __init__(self, log_dir: Path, **env: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_dir / "daphne.log"
        self.env = worker_environment(**{**PRODUCTION_LIKE, **env})
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 30.0) -> "WebServer":
        # Like `go`: hashed static files collected first, served by whitenoise with DEBUG off.
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
            cwd=BASE_DIR,
            env=self.env,
            check=True,
        )
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
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
            cwd=BASE_DIR,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"daphne exited: {self.log()[-3000:]}")
            try:
                # The health check itself waits a second for worker pings.
                httpx.get(f"{self.url}/api/v1/health", timeout=5)
                return self
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError(f"daphne not serving after {timeout} s: {self.log()[-3000:]}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
