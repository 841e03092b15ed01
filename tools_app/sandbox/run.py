"""One command in bubblewrap: started without Python code between fork and exec, its pipes read
up to the output cap, and its process group killed at the time limit, on cancel or when the
output passed its cap; the call returns once no process of the sandbox is left."""

import contextlib
import json
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tools_app.sandbox.handover import hand_to_sandbox
from tools_app.sandbox.limits import Limits, limits_argv
from tools_app.sandbox.mounts import GROUP, PASSWD, bwrap_argv, data_fd, root_prefix, stage_dir

READ_CHUNK = 65536
KILL_WAIT = 2.0


@dataclass
class Outcome:
    """What one sandboxed command did. `killed` says why it was ended early, if it was:
    "time limit", "output limit" or "cancelled"."""

    stdout: str
    stderr: str
    exit_code: int
    duration_ms: int
    cut: bool
    killed: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_sandboxed(
    bwrap: str,
    argv: list[str],
    workspace: Path,
    env: dict[str, str],
    limits: Limits,
    cancelled: Callable[[], bool] | None,
) -> Outcome:
    """Run `argv` in bubblewrap over `workspace` (see tools_app.sandbox.mounts for how). Raises
    WorkspaceTooLarge or SandboxCancelled before anything started, OSError where it cannot."""
    started = time.monotonic()
    workspace.mkdir(parents=True, exist_ok=True)
    workspace = workspace.resolve()
    root = os.geteuid() == 0
    if root:
        hand_to_sandbox(
            workspace,
            max_entries=limits.workspace_entries,
            seconds=limits.wall_seconds,
            cancelled=cancelled,
        )
    source = stage_dir() if root else str(workspace)
    prefix = root_prefix(str(workspace), source) if root else []
    data_fds = (data_fd(PASSWD), data_fd(GROUP))
    info_read, info_write = os.pipe()
    command = [
        *prefix,
        *bwrap_argv(bwrap, source, data_fds, env),
        *["--info-fd", str(info_write)],
        *limits_argv(limits),
        *argv,
    ]
    try:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(*data_fds, info_write),
            start_new_session=True,
            env={},
        )
    except BaseException:
        os.close(info_read)
        raise
    finally:
        for fd in (*data_fds, info_write):
            os.close(fd)
    info = os.fdopen(info_read, "rb")
    try:
        stdout, stderr, info_text, cut, killed = _collect(process, info, limits, started, cancelled)
    finally:
        _kill(process)
        info.close()
    _wait_for_init(info_text)
    return Outcome(
        stdout=stdout.decode("utf-8", errors="replace"),
        stderr=stderr.decode("utf-8", errors="replace"),
        exit_code=process.returncode,
        duration_ms=int((time.monotonic() - started) * 1000),
        cut=cut,
        killed=killed,
    )


def _collect(
    process: subprocess.Popen,
    info: Any,
    limits: Limits,
    started: float,
    cancelled: Callable[[], bool] | None,
) -> tuple[bytes, bytes, str, bool, str]:
    """Read both pipes until they close, the time is up, the output passes its cap or the
    call is cancelled (checked every tenth of a second). Returns stdout, stderr, what
    bubblewrap said on its info descriptor, whether the output was cut and why it was killed."""
    buffers = {process.stdout: bytearray(), process.stderr: bytearray(), info: bytearray()}
    cut, killed = False, ""
    with selectors.DefaultSelector() as selector:
        for stream in buffers:
            selector.register(stream, selectors.EVENT_READ)
        deadline = started + limits.wall_seconds
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                killed = "time limit"
                break
            if cancelled is not None and cancelled():
                killed = "cancelled"
                break
            for key, _ in selector.select(timeout=min(left, 0.1)):
                chunk = os.read(key.fileobj.fileno(), READ_CHUNK)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                buffer = buffers[key.fileobj]
                if key.fileobj is info:
                    buffer += chunk[:READ_CHUNK]
                    continue
                room = limits.output_bytes - len(buffer)
                buffer += chunk[: max(room, 0)]
                if len(chunk) > room:
                    cut, killed = True, "output limit"
            if killed:
                break
    if killed:
        _kill(process)
    else:
        try:
            process.wait(timeout=max(deadline - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:
            killed = "time limit"
            _kill(process)
    said = buffers[info].decode(errors="replace")
    return bytes(buffers[process.stdout]), bytes(buffers[process.stderr]), said, cut, killed


def _wait_for_init(info: str) -> None:
    """Wait until the sandbox's init (bubblewrap's child, PID 1 of its namespace) has ended:
    the kernel ends every process of the namespace before that, so then none is left. Killed
    with its group, it may still be going when the outer bubblewrap has been reaped."""
    try:
        pid = int(json.loads(info)["child-pid"])
    except (ValueError, KeyError, TypeError):
        return  # bubblewrap failed before starting it
    deadline = time.monotonic() + KILL_WAIT
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.01)


def _kill(process: subprocess.Popen) -> None:
    """End the sandbox's process group. bubblewrap's init dies with it (--die-with-parent),
    and with it every process of the sandbox's PID namespace."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        try:
            process.wait(timeout=KILL_WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()
