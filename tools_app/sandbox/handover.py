"""Handing the workspace to the sandbox's user before a call, as root: every entry chowned to
uid 65534 without following a link."""

import contextlib
import os
from pathlib import Path

from tools_app.sandbox.mounts import SANDBOX_UID


def hand_to_sandbox(workspace: Path) -> None:
    """Make the workspace the sandbox user's, without following a symlink anywhere. By
    directory descriptors (`os.fwalk`): another sandbox over the same workspace (a parallel
    step) could swap a directory for a link to /etc between a listing and a chown by path."""
    os.chown(workspace, SANDBOX_UID, SANDBOX_UID, follow_symlinks=False)
    for _top, dirs, files, top_fd in os.fwalk(workspace, follow_symlinks=False):
        for name in dirs + files:
            with contextlib.suppress(FileNotFoundError):  # gone meanwhile
                os.chown(name, SANDBOX_UID, SANDBOX_UID, dir_fd=top_fd, follow_symlinks=False)
