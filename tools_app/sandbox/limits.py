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
