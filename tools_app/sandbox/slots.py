"""The machine-wide cap on sandboxes running at once: one `flock`ed file per slot in a
directory, so every process sharing that directory shares the cap."""

import fcntl
import os
import time
from pathlib import Path

from tools_app.sandbox.errors import SandboxBusy


class Slot:
    """One of `count` lock files held for the life of a sandbox; waits up to `wait` seconds."""

    def __init__(self, directory: Path, count: int, wait: float) -> None:
        self.directory, self.count, self.wait = directory, count, wait
        self.handle: int | None = None

    def __enter__(self) -> "Slot":
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        deadline = time.monotonic() + self.wait
        while True:
            for number in range(self.count):
                handle = os.open(self.directory / f"slot-{number}", os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(handle)
                    continue
                self.handle = handle
                return self
            if time.monotonic() >= deadline:
                raise SandboxBusy(f"all {self.count} sandboxes of this machine are busy")
            time.sleep(0.05)

    def __exit__(self, *exc: object) -> None:
        if self.handle is not None:
            os.close(self.handle)  # closing releases the lock
