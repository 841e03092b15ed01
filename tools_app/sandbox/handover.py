"""Handing the workspace to the sandbox's user before a call, as root: every entry chowned to
uid 65534 without following a link, and the walk bounded in entries, in time and by the run's
Cancel or Stop, so that a huge or growing tree cannot hold a worker (and a slot) for long."""

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path

from tools_app.sandbox.errors import SandboxCancelled, WorkspaceTooLarge
from tools_app.sandbox.mounts import SANDBOX_UID

# How often (in entries) the walk asks whether the run was stopped: asking may query the
# database, chowning one entry takes microseconds.
CANCEL_EVERY = 512


def hand_to_sandbox(
    workspace: Path,
    *,
    max_entries: int,
    seconds: float,
    cancelled: Callable[[], bool] | None = None,
) -> None:
    """Make the workspace the sandbox user's, without following a symlink anywhere. By
    directory descriptors (`os.fwalk`): another sandbox over the same workspace (a parallel
    step) could swap a directory for a link to /etc between a listing and a chown by path.
    Raises WorkspaceTooLarge past `max_entries` entries or `seconds`, SandboxCancelled when
    `cancelled` says so; what was handed over until then stays the sandbox user's."""
    deadline = time.monotonic() + seconds
    os.chown(workspace, SANDBOX_UID, SANDBOX_UID, follow_symlinks=False)
    count = 0
    for _top, dirs, files, top_fd in os.fwalk(workspace, follow_symlinks=False):
        for name in dirs + files:
            count += 1
            if count > max_entries:
                raise WorkspaceTooLarge(
                    f"the workspace has more than {max_entries} files and directories"
                )
            if count % CANCEL_EVERY == 0:
                if time.monotonic() > deadline:
                    raise WorkspaceTooLarge(
                        f"the workspace could not be handed to the sandbox within {seconds:g} s "
                        f"({count} files and directories so far)"
                    )
                if cancelled is not None and cancelled():
                    raise SandboxCancelled("the run was stopped before its command started")
            with contextlib.suppress(FileNotFoundError):  # gone meanwhile
                os.chown(name, SANDBOX_UID, SANDBOX_UID, dir_fd=top_fd, follow_symlinks=False)
