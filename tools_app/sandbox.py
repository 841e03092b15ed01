"""Running code that agents wrote: one command in bubblewrap, over the run's workspace only.

What the sandbox sees is an allow-list: `/usr` read-only with the `/bin`, `/lib`, `/lib64` and
`/sbin` links, an `/etc` of two generated files (`passwd` and `group`, naming the sandbox's user),
a private `/tmp` (tmpfs), its own `/proc` and a minimal `/dev`, and the workspace read-write at
`/workspace`. Nothing else of the machine is there: not `var/`, `.env`, `/run`, the checkout or
other workspaces. Every namespace is unshared (no network), every capability dropped, the
environment cleared (`PATH`, `HOME=/workspace`, `LANG` only), a new session, and the sandbox dies
with its parent.

Why bubblewrap is started as uid 65534 when the worker is root: the kernel exempts processes
whose real uid on the machine is 0 from RLIMIT_NPROC, and bubblewrap started by root maps the
sandbox's uid to 0 outside. Started as 65534, the sandbox's processes are 65534's, and the
process limit (set inside the sandbox, so counted in its own user namespace) holds a fork bomb.
The workspace is handed to 65534 (chowned, symlinks not followed) so the sandbox can write it.
bubblewrap resolves a bind's source path as the user it runs as, and the directories above the
workspace (`var/`, 0700) are not open to 65534: so, still as root, the child about to become
bubblewrap takes a private mount namespace and binds the workspace (by its open descriptor) on
STAGE, a root-owned directory 65534 can reach (the bind is the child's alone); bubblewrap binds STAGE on /workspace. The host's
mounts are untouched.

Limits (`Limits`): wall time (the process group killed), CPU seconds, address space, processes,
size of one file written, and output (read up to a cap, then the sandbox is killed and the
result says `cut`). At most `slots` sandboxes run at once on the machine: one `flock`ed file
per slot in `slot_dir`, so every process sharing that directory shares the cap.
"""

import contextlib
import ctypes
import fcntl
import functools
import json
import os
import selectors
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

SANDBOX_UID = 65534
WORKSPACE = "/workspace"
PATH = "/usr/local/bin:/usr/bin:/bin"
# Where the commands of run_command are looked up, on the machine and inside the sandbox alike.
COMMAND_DIRS = ("/usr/bin", "/bin")
PASSWD = f"nobody:x:{SANDBOX_UID}:{SANDBOX_UID}:sandbox:{WORKSPACE}:/usr/sbin/nologin\n"
GROUP = f"nogroup:x:{SANDBOX_UID}:\n"
READ_CHUNK = 65536
KILL_WAIT = 2.0
PROBE_TIMEOUT = 10.0
TMP_BYTES = 64 * 1024 * 1024
STAGE = Path("/tmp/agentdesk-sandbox-stage")
CLONE_NEWNS = 0x00020000
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
_libc = ctypes.CDLL(None, use_errno=True)


class SandboxUnavailable(Exception):
    """bubblewrap is missing or cannot start here; nothing is run without it."""


class SandboxBusy(Exception):
    """Every slot stayed taken for as long as the call could wait."""


@dataclass(frozen=True)
class Limits:
    wall_seconds: float = 60.0
    cpu_seconds: int = 30
    memory_bytes: int = 1024 * 1024 * 1024
    processes: int = 64
    output_bytes: int = 64 * 1024
    file_bytes: int = 64 * 1024 * 1024


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


class Sandbox:
    """One configuration of the sandbox: the bubblewrap binary, the limits and the slots."""

    def __init__(self, *, bwrap: str = "bwrap", limits: Limits, slots: int, slot_dir: Path) -> None:
        self.bwrap = bwrap
        self.limits = limits
        self.slots = slots
        self.slot_dir = Path(slot_dir)

    def unavailable_reason(self) -> str:
        """Why the sandbox cannot run here ("" when it can): probed once per binary."""
        return _probe(self.bwrap)

    def run(
        self,
        argv: list[str],
        *,
        workspace: Path,
        env: dict[str, str] | None = None,
        limits: Limits | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> Outcome:
        """Run `argv` in the sandbox over `workspace`. Raises SandboxUnavailable or
        SandboxBusy; a command that fails or is killed is an Outcome, not an exception."""
        reason = self.unavailable_reason()
        if reason:
            raise SandboxUnavailable(reason)
        limits = limits or self.limits
        with self._slot(limits.wall_seconds):
            return _run(self.bwrap, argv, workspace, env or {}, limits, cancelled)

    def _slot(self, wait: float) -> "_Slot":
        return _Slot(self.slot_dir, self.slots, wait)


class _Slot:
    """One of `count` lock files held for the life of a sandbox; waits up to `wait` seconds."""

    def __init__(self, directory: Path, count: int, wait: float) -> None:
        self.directory, self.count, self.wait = directory, count, wait
        self.handle: int | None = None

    def __enter__(self) -> "_Slot":
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        deadline = time.monotonic() + self.wait
        while True:
            for number in range(self.count):
                handle = os.open(self.directory / f"slot-{number}", os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(handle)
                    continue
                self.handle = handle
                return self
            if time.monotonic() >= deadline:
                raise SandboxBusy(f"all {self.count} sandboxes of this machine are busy")
            time.sleep(0.05)

    def __exit__(self, *exc: object) -> None:
        if self.handle is not None:
            os.close(self.handle)  # closing releases the lock


def _as_root() -> bool:
    return os.geteuid() == 0


def bwrap_argv(bwrap: str, source: str, data_fds: tuple[int, int], env: dict[str, str]):
    """bubblewrap's arguments up to the command: the allow-list of mounts and the isolation."""
    passwd_fd, group_fd = data_fds
    argv = [
        bwrap,
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for link in ("bin", "lib", "lib64", "sbin"):
        target = os.readlink(f"/{link}") if os.path.islink(f"/{link}") else None
        if target is not None:
            argv += ["--symlink", target, f"/{link}"]
        elif os.path.isdir(f"/{link}"):
            argv += ["--ro-bind", f"/{link}", f"/{link}"]
    argv += [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(TMP_BYTES),
        "--tmpfs",
        "/tmp",
        "--dir",
        "/etc",
        "--ro-bind-data",
        str(passwd_fd),
        "/etc/passwd",
        "--ro-bind-data",
        str(group_fd),
        "/etc/group",
        "--bind",
        source,
        WORKSPACE,
        "--remount-ro",
        "/",
        "--chdir",
        WORKSPACE,
        "--clearenv",
    ]
    # No __pycache__: a module rewritten within the second at the same size would otherwise
    # run from its stale bytecode (and the workspace stays what the agent wrote).
    base = {
        "PATH": PATH,
        "HOME": WORKSPACE,
        "LANG": "C.UTF-8",
        "TMPDIR": "/tmp",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    for name, value in {**base, **env}.items():
        argv += ["--setenv", name, value]
    return argv


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


def _hand_to_sandbox(workspace: Path) -> None:
    """Make the workspace the sandbox user's, without following a symlink anywhere. By
    directory descriptors (`os.fwalk`): another sandbox over the same workspace (a parallel
    step) could swap a directory for a link to /etc between a listing and a chown by path."""
    os.chown(workspace, SANDBOX_UID, SANDBOX_UID, follow_symlinks=False)
    for _top, dirs, files, top_fd in os.fwalk(workspace, follow_symlinks=False):
        for name in dirs + files:
            with contextlib.suppress(FileNotFoundError):  # gone meanwhile
                os.chown(name, SANDBOX_UID, SANDBOX_UID, dir_fd=top_fd, follow_symlinks=False)


def _data_fd(text: str) -> int:
    read, write = os.pipe()
    os.write(write, text.encode())  # far below a pipe's buffer
    os.close(write)
    return read


def _stage_dir() -> str:
    """STAGE, made once: a directory of root's, not a link, that anyone may enter."""
    STAGE.mkdir(mode=0o755, exist_ok=True)
    found = os.lstat(STAGE)
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != 0 or found.st_mode & 0o022:
        raise OSError(f"{STAGE} is not a directory only root may change")
    return str(STAGE)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _as_sandbox_user(workspace: str, stage: str) -> Callable[[], None]:
    """What the child does as root before it becomes bubblewrap: see the module's docstring.
    The workspace is opened after the unshare (a descriptor of the old namespace's mount
    cannot be bound in the new one), without following a link at its end."""

    def prepare() -> None:
        _check(_libc.unshare(CLONE_NEWNS), "unshare")
        _check(_libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "private mounts")
        fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        source = f"/proc/self/fd/{fd}".encode()
        _check(_libc.mount(source, stage.encode(), None, MS_BIND | MS_REC, None), "bind")
        os.close(fd)
        os.setgroups([])
        os.setgid(SANDBOX_UID)
        os.setuid(SANDBOX_UID)

    return prepare


def _run(
    bwrap: str,
    argv: list[str],
    workspace: Path,
    env: dict[str, str],
    limits: Limits,
    cancelled: Callable[[], bool] | None,
) -> Outcome:
    workspace.mkdir(parents=True, exist_ok=True)
    workspace = workspace.resolve()
    root = _as_root()
    if root:
        _hand_to_sandbox(workspace)
    data_fds = (_data_fd(PASSWD), _data_fd(GROUP))
    info_read, info_write = os.pipe()
    source = _stage_dir() if root else str(workspace)
    command = [
        *bwrap_argv(bwrap, source, data_fds, env),
        *["--info-fd", str(info_write)],
        *limits_argv(limits),
        *argv,
    ]
    started = time.monotonic()
    try:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(*data_fds, info_write),
            start_new_session=True,
            preexec_fn=_as_sandbox_user(str(workspace), source) if root else None,  # noqa: PLW1509
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
) -> tuple[bytes, bytes, bool, str]:
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


@functools.cache
def _probe(bwrap: str) -> str:
    """ "" when bubblewrap runs `true` in the sandbox exactly as tools use it, else why not."""
    found = shutil.which(bwrap)
    if found is None:
        return f"bubblewrap ('{bwrap}') is not installed"
    if not os.path.exists("/usr/bin/prlimit"):
        return "prlimit (util-linux) is not in /usr/bin"
    # A fresh private directory: a guessable /tmp name could be another user's link, whose
    # target the sandbox's hand-over would then give to uid 65534.
    probe = Path(tempfile.mkdtemp(prefix="agentdesk-sandbox-probe-"))
    try:
        outcome = _run(
            found, ["/usr/bin/true"], probe, {}, Limits(wall_seconds=PROBE_TIMEOUT), None
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap could not start: {exc}"
    finally:
        shutil.rmtree(probe, ignore_errors=True)
    if outcome.exit_code != 0:
        said = outcome.stderr.strip().splitlines()
        return f"bubblewrap could not start a sandbox: {said[-1] if said else outcome.exit_code}"
    return ""


def sandbox_from_settings() -> Sandbox:
    """The sandbox as settings configure it (SANDBOX_*)."""
    from django.conf import settings

    return Sandbox(
        bwrap=settings.SANDBOX_BWRAP,
        slots=settings.SANDBOX_MAX_RUNNING,
        slot_dir=Path(settings.SANDBOX_SLOT_DIR),
        limits=Limits(
            wall_seconds=settings.SANDBOX_WALL_SECONDS,
            cpu_seconds=settings.SANDBOX_CPU_SECONDS,
            memory_bytes=settings.SANDBOX_MEMORY_MB * 1024 * 1024,
            processes=settings.SANDBOX_PROCESSES,
            output_bytes=settings.SANDBOX_OUTPUT_BYTES,
            file_bytes=settings.SANDBOX_FILE_MB * 1024 * 1024,
        ),
    )
