"""Whether the sandbox can run on this machine: bubblewrap run once, exactly as tools use it."""

import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from tools_app.sandbox.errors import SandboxCancelled, WorkspaceTooLarge
from tools_app.sandbox.limits import Limits
from tools_app.sandbox.mounts import ROOT_PROGRAMS
from tools_app.sandbox.run import run_sandboxed

PROBE_TIMEOUT = 10.0


@functools.cache
def probe(bwrap: str) -> str:
    """ "" when bubblewrap runs `true` in the sandbox exactly as tools use it, else why not."""
    found = shutil.which(bwrap)
    if found is None:
        return f"bubblewrap ('{bwrap}') is not installed"
    needed = ("/usr/bin/prlimit", *(ROOT_PROGRAMS if os.geteuid() == 0 else ()))
    missing = [program for program in needed if not os.path.exists(program)]
    if missing:
        return f"{', '.join(missing)} (util-linux) not found"
    # A fresh private directory: a guessable /tmp name could be another user's link, whose
    # target the sandbox's hand-over would then give to uid 65534.
    workspace = Path(tempfile.mkdtemp(prefix="agentdesk-sandbox-probe-"))
    try:
        outcome = run_sandboxed(
            found, ["/usr/bin/true"], workspace, {}, Limits(wall_seconds=PROBE_TIMEOUT), None
        )
    except (OSError, subprocess.SubprocessError, WorkspaceTooLarge, SandboxCancelled) as exc:
        return f"bubblewrap could not start: {exc}"
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    if outcome.exit_code != 0:
        said = outcome.stderr.strip().splitlines()
        return f"bubblewrap could not start a sandbox: {said[-1] if said else outcome.exit_code}"
    return ""
