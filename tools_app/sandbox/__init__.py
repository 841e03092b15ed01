"""Running code that agents wrote: one command in bubblewrap, over the run's workspace only.

One idea per module: `mounts` (what the sandbox sees, and how root hands bubblewrap the
workspace), `limits` (what a call may use), `handover` (the workspace given to the sandbox's
user, bounded), `slots` (the machine-wide cap on sandboxes at once, and the bounded wait for
one), `run` (starting, reading and ending one command), `probe` (whether it can run here).

Why bubblewrap is started as uid 65534 when the worker is root: the kernel exempts processes
whose real uid on the machine is 0 from RLIMIT_NPROC, and bubblewrap started by root maps the
sandbox's uid to 0 outside. Started as 65534, the sandbox's processes are 65534's, and the
process limit (set inside the sandbox, so counted in its own user namespace) holds a fork bomb.
"""

from collections.abc import Callable
from pathlib import Path

from tools_app.sandbox.errors import (
    SandboxBusy,
    SandboxCancelled,
    SandboxUnavailable,
    WorkspaceTooLarge,
)
from tools_app.sandbox.limits import Limits, limits_argv
from tools_app.sandbox.mounts import COMMAND_DIRS, PATH, SANDBOX_UID, WORKSPACE, bwrap_argv
from tools_app.sandbox.probe import probe
from tools_app.sandbox.run import Outcome, run_sandboxed
from tools_app.sandbox.slots import Slot

__all__ = [
    "COMMAND_DIRS",
    "PATH",
    "SANDBOX_UID",
    "WORKSPACE",
    "Limits",
    "Outcome",
    "Sandbox",
    "SandboxBusy",
    "SandboxCancelled",
    "SandboxUnavailable",
    "WorkspaceTooLarge",
    "bwrap_argv",
    "limits_argv",
    "sandbox_from_settings",
]

SLOT_WAIT_SECONDS = 30.0


class Sandbox:
    """One configuration of the sandbox: the bubblewrap binary, the limits, the slots and how
    long a call waits for one."""

    def __init__(
        self,
        *,
        bwrap: str = "bwrap",
        limits: Limits,
        slots: int,
        slot_dir: Path,
        slot_wait: float = SLOT_WAIT_SECONDS,
    ) -> None:
        self.bwrap = bwrap
        self.limits = limits
        self.slots = slots
        self.slot_dir = Path(slot_dir)
        self.slot_wait = slot_wait

    def unavailable_reason(self) -> str:
        """Why the sandbox cannot run here ("" when it can): probed once per binary."""
        return probe(self.bwrap)

    def run(
        self,
        argv: list[str],
        *,
        workspace: Path,
        env: dict[str, str] | None = None,
        limits: Limits | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> Outcome:
        """Run `argv` in the sandbox over `workspace`. A free slot is waited for up to
        `slot_wait` seconds (never past the call's wall time) or until `cancelled` says so.
        Raises SandboxUnavailable, SandboxBusy, SandboxCancelled or WorkspaceTooLarge, each
        before anything ran; a command that fails or is killed is an Outcome, not an exception."""
        reason = self.unavailable_reason()
        if reason:
            raise SandboxUnavailable(reason)
        limits = limits or self.limits
        wait = min(self.slot_wait, limits.wall_seconds)
        with Slot(self.slot_dir, self.slots, wait, cancelled):
            return run_sandboxed(self.bwrap, argv, workspace, env or {}, limits, cancelled)


def sandbox_from_settings() -> Sandbox:
    """The sandbox as settings configure it (SANDBOX_*)."""
    from django.conf import settings

    return Sandbox(
        bwrap=settings.SANDBOX_BWRAP,
        slots=settings.SANDBOX_MAX_RUNNING,
        slot_dir=Path(settings.SANDBOX_SLOT_DIR),
        slot_wait=settings.SANDBOX_SLOT_WAIT_SECONDS,
        limits=Limits(
            wall_seconds=settings.SANDBOX_WALL_SECONDS,
            cpu_seconds=settings.SANDBOX_CPU_SECONDS,
            memory_bytes=settings.SANDBOX_MEMORY_MB * 1024 * 1024,
            processes=settings.SANDBOX_PROCESSES,
            output_bytes=settings.SANDBOX_OUTPUT_BYTES,
            file_bytes=settings.SANDBOX_FILE_MB * 1024 * 1024,
            workspace_entries=settings.SANDBOX_WORKSPACE_ENTRIES,
        ),
    )
