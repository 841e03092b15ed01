"""The sandbox holds against what code run as root's agent might try (issue 34): each attempt
is run through run_python against real bubblewrap, as the worker and CI run it (root), and
must be contained with nothing changed outside the workspace."""

import os
import socket
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings

from tests.support.sandbox import sandbox_processes, working_sandbox
from tools_app.builtin import GitCommitTool, GitTool, RunPythonTool
from tools_app.registry import ToolContext, ToolRegistry, ToolResult


@pytest.fixture
def workspaces(tmp_path) -> Path:
    return tmp_path / "workspaces"


@pytest.fixture
def context(workspaces) -> ToolContext:
    return ToolContext(run_id=1, workspace=workspaces / "run-1", timeout=10.0)


def registry_with(tmp_path, **limits) -> ToolRegistry:
    sandbox = working_sandbox(tmp_path / "slots", **limits)
    registry = ToolRegistry()
    for tool in (RunPythonTool(sandbox), GitTool(sandbox), GitCommitTool(sandbox)):
        registry.register(tool)
    return registry


@pytest.fixture
def registry(tmp_path) -> ToolRegistry:
    return registry_with(tmp_path)


def python(registry, context, code: str) -> ToolResult:
    return registry.call("run_python", {"code": code}, context)


def attempt(registry, context, code: str) -> str:
    """Run `code` (which prints REACHED on success) and return what it printed and raised."""
    result = python(registry, context, code)
    assert result.ok, result.error
    return result.content["stdout"] + result.content["stderr"]


def test_tcp_to_the_machines_database_and_redis_is_unreachable(registry, context):
    said = attempt(
        registry,
        context,
        "import socket\n"
        "for port in (5432, 6379):\n"
        "    try:\n"
        "        socket.create_connection(('127.0.0.1', port), timeout=1)\n"
        "        print('REACHED', port)\n"
        "    except OSError as e:\n"
        "        print('BLOCKED', port, e)\n",
    )

    assert "REACHED" not in said
    assert said.count("BLOCKED") == 2


def test_a_unix_socket_of_the_machine_is_not_there(registry, context, tmp_path):
    path = f"/tmp/agentdesk-escape-{os.getpid()}.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen()
    try:
        said = attempt(
            registry,
            context,
            "import os, socket\n"
            f"for path in ({path!r}, '/var/run/postgresql/.s.PGSQL.5432', '/run'):\n"
            "    try:\n"
            "        if os.path.isdir(path): print('REACHED', path, os.listdir(path)); continue\n"
            "        socket.socket(socket.AF_UNIX).connect(path)\n"
            "        print('REACHED', path)\n"
            "    except OSError as e:\n"
            "        print('BLOCKED', e)\n",
        )
    finally:
        listener.close()
        os.unlink(path)

    assert "REACHED" not in said and said.count("BLOCKED") == 3


def test_secrets_of_the_machine_and_other_workspaces_cannot_be_read(registry, context, workspaces):
    other = workspaces / "run-2" / "secret.txt"
    other.parent.mkdir(parents=True)
    other.write_text("other run's secret")
    paths = [
        "/etc/shadow",
        str(settings.VAR_DIR / "secret_key"),
        str(settings.BASE_DIR / ".env"),
        str(settings.BASE_DIR / "manage.py"),
        str(other),
        "../run-2/secret.txt",
    ]

    said = attempt(
        registry,
        context,
        f"for path in {paths!r}:\n"
        "    try:\n"
        "        print('REACHED', path, open(path).read()[:20])\n"
        "    except OSError as e:\n"
        "        print('BLOCKED', e)\n",
    )

    assert "REACHED" not in said and said.count("BLOCKED") == len(paths)


def test_the_workers_environment_does_not_reach_the_sandbox(registry, context, monkeypatch):
    monkeypatch.setenv("AGENTDESK_ESCAPE_SECRET", "s3cret-from-the-worker")

    said = attempt(registry, context, "import os; print(sorted(os.environ.items()))")

    assert "s3cret-from-the-worker" not in said
    assert "AGENTDESK_ESCAPE_SECRET" not in said
    assert "SECRET_KEY" not in said and "DATABASE_URL" not in said


def test_root_and_usr_cannot_be_remounted_or_written(registry, context):
    said = attempt(
        registry,
        context,
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "MS_REMOUNT, MS_BIND = 32, 4096\n"
        "for target in (b'/', b'/usr'):\n"
        "    if libc.mount(None, target, None, MS_REMOUNT | MS_BIND, None) == 0:\n"
        "        print('REACHED remount', target)\n"
        "    else:\n"
        "        print('BLOCKED', target, os.strerror(ctypes.get_errno()))\n"
        "for path in ('/usr/agentdesk-escape', '/usr/bin/python3'):\n"
        "    try:\n"
        "        open(path, 'a').write('x'); print('REACHED', path)\n"
        "    except OSError as e:\n"
        "        print('BLOCKED', e)\n",
    )

    assert "REACHED" not in said and said.count("BLOCKED") == 4
    assert not Path("/usr/agentdesk-escape").exists()


def test_writes_outside_the_workspace_change_nothing_of_the_machine(registry, context, tmp_path):
    outside = tmp_path / "outside.txt"
    marker = f"/tmp/agentdesk-escape-{os.getpid()}.txt"

    said = attempt(
        registry,
        context,
        f"for path in ({str(outside)!r}, '../outside.txt', '/etc/passwd', '/new'):\n"
        "    try:\n"
        "        open(path, 'w').write('x'); print('REACHED', path)\n"
        "    except OSError as e:\n"
        "        print('BLOCKED', e)\n"
        f"open({marker!r}, 'w').write('private')\n",  # the sandbox's own /tmp
    )

    assert "REACHED" not in said and said.count("BLOCKED") == 4
    assert not outside.exists() and not (context.workspace.parent / "outside.txt").exists()
    assert not Path(marker).exists()


def test_a_fork_bomb_is_held_by_the_process_limit_and_leaves_nothing(tmp_path, context):
    registry = registry_with(tmp_path, processes=16, wall_seconds=3.0)
    started = time.monotonic()

    result = python(
        registry,
        context,
        "import os  # fork-bomb-token\n"
        "n = 0\n"
        "for _ in range(1000):\n"
        "    try:\n"
        "        if os.fork() == 0:\n"
        "            import time; time.sleep(60); os._exit(0)\n"
        "        n += 1\n"
        "    except OSError:\n"
        "        break\n"
        "print('forked', n)\n",
    )

    assert result.ok, result.error
    forked = int(result.content["stdout"].split()[1])
    assert forked < 16
    assert time.monotonic() - started < 2.5  # stopped by the limit, not the clock
    assert sandbox_processes("fork-bomb-token") == []


def test_a_hundred_megabytes_of_output_are_cut_at_the_cap(registry, context):
    result = python(
        registry, context, "import sys\nfor _ in range(100): sys.stdout.write('x' * (1 << 20))"
    )

    assert result.ok
    assert result.content["cut"] is True and result.content["killed"] == "output limit"
    assert len(result.content["stdout"]) == 4096
    assert result.content["duration_ms"] < 3000


def test_two_gigabytes_of_memory_are_refused(registry, context):
    result = python(registry, context, "block = bytearray(2 << 30)")

    assert result.ok and result.content["exit_code"] != 0
    assert "MemoryError" in result.content["stderr"]


def test_a_process_past_the_time_limit_is_killed_with_its_children(tmp_path, context):
    registry = registry_with(tmp_path, wall_seconds=1.0)

    result = python(
        registry,
        context,
        "import subprocess, time\n"
        "subprocess.Popen(['/usr/bin/python3', '-c', 'import time; time.sleep(60)  # late'],"
        " start_new_session=True)\n"
        "time.sleep(60)\n",
    )

    assert not result.ok and "time limit" in result.error
    assert result.content["duration_ms"] < 2500
    assert sandbox_processes("# late") == []


def test_a_process_left_running_in_the_background_ends_with_the_call(registry, context):
    result = python(
        registry,
        context,
        "import subprocess\n"
        "subprocess.Popen(['/usr/bin/python3', '-c', 'import time; time.sleep(60)  # left'],"
        " start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "print('left it')\n",
    )

    assert result.ok and result.content["stdout"] == "left it\n"
    assert sandbox_processes("# left") == []


def test_a_cancelled_sandbox_ends_within_a_second(tmp_path, context):
    sandbox = working_sandbox(tmp_path / "slots", wall_seconds=10.0)
    asked = threading.Event()
    threading.Timer(0.3, asked.set).start()
    started = time.monotonic()

    outcome = sandbox.run(
        ["/usr/bin/python3", "-c", "import time; time.sleep(60)  # cancelled"],
        workspace=context.workspace,
        cancelled=asked.is_set,
    )

    assert outcome.killed == "cancelled"
    assert time.monotonic() - started < 1.3
    assert sandbox_processes("# cancelled") == []


def test_a_git_hook_in_the_repository_does_not_run(registry, context):
    workspace = context.workspace
    assert registry.call("git", {"subcommand": "init"}, context).ok
    hook = workspace / ".git" / "hooks" / "pre-commit"  # git's own place, no key needed
    hook.write_text("#!/bin/sh\ntouch /workspace/ran\n")
    hook.chmod(0o755)
    (workspace / "a.txt").write_text("a\n")

    for call in (
        ("git", {"subcommand": "status"}),
        ("git", {"subcommand": "add", "args": ["a.txt"]}),
        ("git_commit", {"message": "with a hook waiting"}),
    ):
        result = registry.call(*call, context)
        assert result.ok and result.content["exit_code"] == 0, result.content

    assert not (workspace / "ran").exists()


@pytest.mark.parametrize(
    "monitor",
    ["/workspace/monitor.sh", "echo ran uid=$(id -u) >> /workspace/ran; true"],
    ids=["an absolute path", "a shell string"],
)
def test_fsmonitor_in_the_workspaces_config_does_not_run(registry, context, monitor):
    workspace = context.workspace
    workspace.mkdir(parents=True)
    (workspace / "monitor.sh").write_text("#!/bin/sh\ntouch /workspace/ran\n")
    (workspace / "monitor.sh").chmod(0o755)
    (workspace / "a.txt").write_text("a\n")
    assert registry.call("git", {"subcommand": "init"}, context).ok
    # An index: git reads it for status, diff and add, and starts the monitor when it does.
    assert registry.call("git", {"subcommand": "add", "args": ["a.txt"]}, context).ok
    with (workspace / ".git" / "config").open("a") as config:  # as code run before could
        config.write(f"[core]\n\tfsmonitor = {monitor}\n")

    for call in (
        ("git", {"subcommand": "status"}),
        ("git", {"subcommand": "diff"}),
        ("git", {"subcommand": "add", "args": ["a.txt"]}),
        ("git_commit", {"message": "with a monitor waiting"}),
    ):
        result = registry.call(*call, context)
        assert not (workspace / "ran").exists(), f"the monitor ran on {call}"
        assert not result.ok
        assert "the repository's config sets core.fsmonitor" in result.error, result.error


def test_links_in_the_workspace_do_not_hand_their_targets_to_the_sandbox(
    registry, context, tmp_path
):
    victim = tmp_path / "victim"
    (victim / "inner").mkdir(parents=True)
    (victim / "file.txt").write_text("root's")
    context.workspace.mkdir(parents=True)
    (context.workspace / "to-file").symlink_to(victim / "file.txt")
    (context.workspace / "to-dir").symlink_to(victim)

    said = attempt(
        registry,
        context,
        "for path in ('to-file', 'to-dir/file.txt'):\n"
        "    try:\n"
        "        open(path, 'a').write('x'); print('REACHED', path)\n"
        "    except OSError as e:\n"
        "        print('BLOCKED', e)\n",
    )

    assert "REACHED" not in said and said.count("BLOCKED") == 2
    for path in (victim, victim / "inner", victim / "file.txt"):
        assert path.stat().st_uid == os.getuid()
    assert (victim / "file.txt").read_text() == "root's"
