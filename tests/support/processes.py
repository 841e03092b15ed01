"""Child processes the tests run for real (workers, daphne, MCP servers): each in its own
process group with a log file, started until ready, stopped with its whole group."""

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from config.env import BASE_DIR


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def pid_with_env(variable: str, value: str) -> int:
    """The one process whose environment has `variable=value`. Two such processes mean two
    sessions to the same server (a test would kill the wrong one): an error, not a guess."""
    needle = f"{variable}={value}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if needle in f.read().split(b"\0"):
                        found.append(int(entry))
            except OSError:
                continue
    assert len(found) == 1, f"expected one process with {variable}={value}, found {found}"
    return found[0]


class ManagedProcess:
    def __init__(self, name: str, log_path: Path, env: dict[str, str]):
        self.name = name
        self.log_path = log_path
        self.env = env
        self.process: subprocess.Popen | None = None

    def spawn(self, command: list[str], *, ready: Callable[[], bool], timeout: float) -> None:
        """Start `command` and wait until `ready()`; a failure says what the log said."""
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                command,
                cwd=BASE_DIR,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited: {self.log()[-3000:]}")
            if ready():
                return
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} not ready after {timeout} s: {self.log()[-3000:]}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def signal_group(self, signum: int) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signum)

    def kill(self) -> None:
        """SIGKILL the whole process group, as if the machine died."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM the group (a graceful shutdown), SIGKILL what is left after `timeout`."""
        stop_all([self], timeout)


def stop_all(processes: list[ManagedProcess], timeout: float = 15.0) -> None:
    """Stop them all at once, as ManagedProcess.stop does one: a graceful shutdown takes a
    worker over a second, spent waiting, so several are not stopped one after the other."""
    running = [p for p in processes if p.process and p.process.poll() is None]
    for managed in running:
        managed.signal_group(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for managed in running:
        try:
            managed.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            managed.kill()


def wait_until(predicate: Callable[[], object], timeout: float, interval: float = 0.05) -> bool:
    """Whether `predicate()` became true within `timeout` seconds (checked every `interval`)."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
