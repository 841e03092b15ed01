"""What one sandboxed call may use, and the `prlimit` that holds it inside the sandbox."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    wall_seconds: float = 60.0
    cpu_seconds: int = 30
    memory_bytes: int = 1024 * 1024 * 1024
    processes: int = 64
    output_bytes: int = 64 * 1024
    file_bytes: int = 64 * 1024 * 1024
    # Files and directories of the workspace handed to the sandbox's user before the call: past
    # this the call fails rather than walk a huge tree (the walk is also bounded by wall_seconds).
    workspace_entries: int = 20_000


def limits_argv(limits: Limits) -> list[str]:
    """`prlimit` inside the sandbox: set there, the process limit counts the sandbox's own
    processes (its user namespace), not every process of the uid on the machine."""
    return [
        "/usr/bin/prlimit",
        f"--cpu={limits.cpu_seconds}",
        f"--as={limits.memory_bytes}",
        f"--nproc={limits.processes}",
        f"--fsize={limits.file_bytes}",
        "--core=0",
        "--",
    ]
