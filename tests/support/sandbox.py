"""The code tools' sandbox as the tests use it: real bubblewrap with short limits, its slots in
the test's own directory, the skip (naming why) where bubblewrap cannot start, and the
sandbox's processes left on the machine."""

import os
from dataclasses import replace
from pathlib import Path

import pytest

from tools_app.sandbox import SANDBOX_UID, Limits, Sandbox, sandbox_from_settings

# Short, so that a test of a limit ends in a second or two.
TEST_LIMITS = Limits(
    wall_seconds=5.0,
    cpu_seconds=3,
    memory_bytes=512 * 1024 * 1024,
    processes=32,
    output_bytes=4096,
    file_bytes=8 * 1024 * 1024,
)


def sandbox_for_tests(slot_dir: Path, **limits) -> Sandbox:
    """The sandbox with TEST_LIMITS (some replaced by `limits`) and the settings' binary."""
    configured = sandbox_from_settings()
    return Sandbox(
        bwrap=configured.bwrap,
        limits=replace(TEST_LIMITS, **limits),
        slots=2,
        slot_dir=slot_dir,
    )


def working_sandbox(slot_dir: Path, **limits) -> Sandbox:
    """sandbox_for_tests, or the test is skipped, naming why, where bubblewrap cannot start
    (the tests of an unavailable sandbox do not use this)."""
    sandbox = sandbox_for_tests(slot_dir, **limits)
    reason = sandbox.unavailable_reason()
    if reason:
        pytest.skip(f"the sandbox cannot run on this machine: {reason}")
    return sandbox


def sandbox_processes(token: str) -> list[int]:
    """The machine's processes running as the sandbox's user whose command line holds `token`
    (put in the test's code: other tests' sandboxes may be running at the same time)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
            command = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        uid = next(int(line.split()[1]) for line in status.splitlines() if line[:4] == "Uid:")
        if uid == SANDBOX_UID and token.encode() in command:
            found.append(int(entry))
    return found
