"""What the sandbox sees, and how root hands bubblewrap the workspace.

bubblewrap's allow-list (`bwrap_argv`): `/usr` read-only with the `/bin`, `/lib`, `/lib64` and
`/sbin` links, an `/etc` of two generated files (`passwd` and `group`, naming the sandbox's
user), a private `/tmp` (tmpfs), its own `/proc` and a minimal `/dev`, and the workspace
read-write at `/workspace`; every namespace unshared, every capability dropped, the environment
cleared, a new session, and the sandbox dies with its parent.

As root (`root_prefix`): bubblewrap resolves a bind's source path as the user it runs as, and
the directories above the workspace (`var/`, 0700) are not open to 65534. So the command is
prefixed by programs that, still as root, take a private mount namespace (`unshare`), bind the
workspace on STAGE, a root-owned directory 65534 can reach (`mount`; the bind is that process's
alone, the host's mounts are untouched), then become 65534 (`setpriv`) and exec bubblewrap,
which binds STAGE on /workspace. Programs, not a `preexec_fn`: Python code run between fork and
exec may deadlock in a program with threads (the worker's parallel steps, Celery's threads).
"""

import os
import stat
from pathlib import Path

SANDBOX_UID = 65534
WORKSPACE = "/workspace"
PATH = "/usr/local/bin:/usr/bin:/bin"
# Where the commands of run_command are looked up, on the machine and inside the sandbox alike.
COMMAND_DIRS = ("/usr/bin", "/bin")
PASSWD = f"nobody:x:{SANDBOX_UID}:{SANDBOX_UID}:sandbox:{WORKSPACE}:/usr/sbin/nologin\n"
GROUP = f"nogroup:x:{SANDBOX_UID}:\n"
TMP_BYTES = 64 * 1024 * 1024
STAGE = Path("/tmp/agentdesk-sandbox-stage")
# The programs root runs before bubblewrap (util-linux); the probe checks they are there.
UNSHARE, MOUNT, SETPRIV = "/usr/bin/unshare", "/usr/bin/mount", "/usr/bin/setpriv"
ROOT_PROGRAMS = (UNSHARE, MOUNT, SETPRIV)
# Run by /bin/sh in the private mount namespace: bind $1 on $2, then exec the rest.
BIND_THEN_EXEC = f'{MOUNT} --bind -- "$1" "$2" || exit 125; shift 2; exec "$@"'


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


def root_prefix(workspace: str, stage: str) -> list[str]:
    """What root runs before bubblewrap: see the module's docstring. The workspace is a
    directory of root's tree (its parent is root's, so the sandbox cannot swap it for a link);
    it is checked not to be a link here all the same."""
    if not stat.S_ISDIR(os.lstat(workspace).st_mode):
        raise OSError(f"{workspace} is not a directory")
    return [
        *(UNSHARE, "--mount", "--propagation", "private", "--"),
        *("/bin/sh", "-c", BIND_THEN_EXEC, "sandbox-stage", workspace, stage),
        *(SETPRIV, f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups", "--"),
    ]


def data_fd(text: str) -> int:
    read, write = os.pipe()
    os.write(write, text.encode())  # far below a pipe's buffer
    os.close(write)
    return read


def stage_dir() -> str:
    """STAGE, made once: a directory of root's, not a link, that anyone may enter."""
    STAGE.mkdir(mode=0o755, exist_ok=True)
    found = os.lstat(STAGE)
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != 0 or found.st_mode & 0o022:
        raise OSError(f"{STAGE} is not a directory only root may change")
    return str(STAGE)
