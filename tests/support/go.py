"""`uv run go` in a subprocess, as a person starts it, with its embedded stack (SQLite, Valkey)
in a directory of its own: the launcher's tests and the browser test of the demo it serves."""

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from config.env import BASE_DIR
from tests.support.processes import free_port

# Bounds for a loaded CI machine (four test processes on two cores, each with its own
# workers and servers): a start that migrates, collects static files and waits for a worker
# has taken over 60 s there. A healthy `go` reaches each line long before.
START_TIMEOUT = 180.0
STOP_TIMEOUT = 60.0
ADMIN_PASSWORD = "launcher-test-pass"


class RunningGo:
    """A `go` launcher in a subprocess, with its output collected by a thread."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "config.launcher"],
            cwd=BASE_DIR,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        threading.Thread(target=self._collect, daemon=True).start()

    def _collect(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return self.output_since(0)

    def output_since(self, line: int) -> str:
        """What it printed from its line number `line` on: a test of the shared `go` reads
        only what it printed since the test began (`start = len(go.lines)`)."""
        return "".join(self.lines[line:])

    def wait_for_output(self, text: str, timeout: float, since: int = 0) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.output_since(since):
            if self.process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"`go` never printed {text!r}; its output:\n{self.output}")
            time.sleep(0.2)

    def descendants(self) -> list[tuple[int, str]]:
        """Every process below the launcher, as (pid, start time) so a reused pid is not mistaken."""
        found: list[tuple[int, str]] = []
        parents = [self.process.pid]
        while parents:
            parent = parents.pop()
            for children in Path(f"/proc/{parent}/task").glob("*/children"):
                for pid in map(int, children.read_text().split()):
                    found.append((pid, _start_time(pid)))
                    parents.append(pid)
        return found

    def kill(self) -> None:
        """SIGKILL it and everything below it: a failed test must not leave a server behind."""
        if self.process.poll() is None:
            leftovers = self.descendants()
            self.process.kill()
            self.process.wait()
            for pid, _ in leftovers:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def _start_time(pid: int) -> str:
    # Fields after the parenthesised command name; the start time is field 22 of the whole line.
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]


def go_environment(directory: Path, **overrides: str) -> dict[str, str]:
    """The environment of a `go` with its embedded stack in `directory`."""
    env = dict(os.environ)
    env.update(
        # A port of the system's choosing: Valkey's own search starts at 16379 for every
        # launcher, and two started at once (parallel tests) could both pick the same one.
        VALKEY_PORT=str(free_port()),
        PORT=str(free_port()),
        # The demo's port, should this `go` serve it (no LLM configured): never a fixed one.
        DEMO_MODEL_PORT=str(free_port()),
        HOST="127.0.0.1",
        REDIS_URL="",  # empty rather than unset, so a REDIS_URL in .env is not picked up
        VAR_DIR=str(directory / "var"),
        DATABASE_URL=f"sqlite:///{directory / 'db.sqlite3'}",
        ADMIN_PASSWORD=ADMIN_PASSWORD,
        # One worker process of one thread: each process a `go` starts costs the tests'
        # processors seconds (WORKER_PROCESSES defaults to one per processor).
        WORKER_CONCURRENCY="1",
        WORKER_PROCESSES="1",
    )
    env.update(overrides)
    return env
