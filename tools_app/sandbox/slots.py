"""The machine-wide cap on sandboxes running at once: one `flock`ed file per slot in a
directory, so every process sharing that directory shares the cap. A wait for a free slot ends
when one frees, when the run is cancelled or stopped, or at its deadline, whichever is first."""

import fcntl
import os
import time
from collections.abc import Callable
from pathlib import Path

from tools_app.sandbox.errors import SandboxBusy, SandboxCancelled

POLL_SECONDS = 0.05


class Slot:
    """One of `count` lock files, held for the life of a sandbox."""

    def __init__(
        self,
        directory: Path,
        count: int,
        wait: float,
        cancelled: Callable[[], bool] | None = None,
    ) -> None:
        self.directory, self.count, self.wait = directory, count, wait
        self.cancelled = cancelled
        self.handle: int | None = None

    def __enter__(self) -> "Slot":
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        deadline = time.monotonic() + self.wait
        while True:
            if self._take():
                return self
            if self.cancelled is not None and self.cancelled():
                raise SandboxCancelled("the run was stopped while the call waited for a sandbox")
            if time.monotonic() >= deadline:
                raise SandboxBusy(
                    f"all {self.count} sandboxes of this machine stayed busy for {self.wait:g} s"
                )
            time.sleep(POLL_SECONDS)

    def _take(self) -> bool:
        for number in range(self.count):
            handle = os.open(self.directory / f"slot-{number}", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(handle)
                continue
            self.handle = handle
            return True
        return False

    def __exit__(self, *exc: object) -> None:
        if self.handle is not None:
            os.close(self.handle)  # closing releases the lock
