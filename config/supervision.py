"""What `go` (config/launcher.py) and its embedded services share: the error that stops it,
and the pause before a process that died is started again."""

import signal
from dataclasses import dataclass

# Restarts: the first after this pause, each next one after twice the last, at most the cap.
RESTART_FIRST_DELAY = 1.0
RESTART_MAX_DELAY = 30.0
# A process that ran this long before it died was healthy: its restart waits the first pause.
RESTART_RESET_AFTER = 60.0


class LaunchError(Exception):
    """AgentDesk cannot start or keep running; the message says why."""


@dataclass
class Backoff:
    """How long to wait before starting a process that died again."""

    quick_deaths: int = 0

    def delay_after(self, ran_for: float) -> float:
        if ran_for >= RESTART_RESET_AFTER:
            self.quick_deaths = 0
        delay = min(RESTART_FIRST_DELAY * 2**self.quick_deaths, RESTART_MAX_DELAY)
        self.quick_deaths += 1
        return delay


def describe_exit(code: int) -> str:
    if code >= 0:
        return f"exited with code {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    return f"was killed by {name} (exit code {code})"
