"""`uv run go`: run AgentDesk on one machine (broker, local model, migrations, web server,
worker); the embedded services are in config/embedded.py.

Each child runs in its own session, so a Ctrl-C in the terminal reaches only this process.
The launcher then stops the web server, then the worker, and stops the local model and the
broker last, because the worker still needs them while its running tasks finish.

Once AgentDesk is up the launcher supervises: a web server, worker, local model or embedded
Valkey that dies is started again after a pause that doubles with each quick death (see
`Backoff`). The runs a dead worker held are queued again once their leases have expired, and
the new worker resumes them. Before AgentDesk is up a death stops everything instead: that is a
configuration error, which starting again would only repeat.
"""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from django.core.exceptions import ImproperlyConfigured

from agents_app.demo import DEMO_MODEL_NAME
from config.embedded import (
    DEMO_MODEL_ARGS,
    LOCAL_MODEL_ARGS,
    LOCAL_MODEL_READY_TIMEOUT,
    EmbeddedValkey,
    demo_model_port,
    demo_model_ready,
    local_model_ready,
    local_model_started,
    local_model_to_serve,
)
from config.env import (
    BASE_DIR,
    env_float,
    env_int,
    env_str,
    load_dotenv,
    worker_concurrency,
    worker_pool,
    worker_processes,
)
from config.local_model import HOST as LOCAL_MODEL_HOST
from config.supervision import Backoff, LaunchError, describe_exit

READY_TIMEOUT = 30.0
# Celery's warm shutdown lets running tasks finish; a task cut off after this is delivered again.
SHUTDOWN_GRACE = 10.0
POLL_INTERVAL = 0.2
# Without a terminal, `uv run` passes on the Ctrl-C its process group already got: one press
# arrives twice. A signal this soon after the first is that copy, not a second press.
REPEAT_SIGNAL_WINDOW = 1.0
# After a worker died, this long past the end of its leases its runs are queued again.
RECOVERY_MARGIN = 1.0
WORKER_ARGS = ["-m", "celery", "-A", "config", "worker", "--loglevel=INFO"]


def worker_arguments(pool: str, concurrency: int, hostname: str = "agentdesk@%h") -> list[str]:
    """How `go` starts its worker (tests and benchmarks start theirs alike)."""
    return [*WORKER_ARGS, f"--pool={pool}", f"--concurrency={concurrency}", "-n", hostname]


class StopRequested(Exception):
    """Ctrl-C or SIGTERM arrived."""


@dataclass
class Child:
    name: str
    python_args: list[str]
    process: subprocess.Popen[bytes]
    started_at: float
    # A worker: its death leaves runs with a lease nobody renews.
    holds_runs: bool = False
    # A service the others call (the local model): stopped after them.
    service: bool = False
    backoff: Backoff = field(default_factory=Backoff)
    # Set while the child is dead and waiting for its restart.
    restart_at: float | None = None


class Launcher:
    def __init__(self, var_dir: Path) -> None:
        self.var_dir = var_dir
        self.children: list[Child] = []
        self.valkey: EmbeddedValkey | None = None
        # When to queue again the runs no worker holds (`manage.py runs_recover`).
        self.recoveries: list[float] = []
        self.stop_requested_at: float | None = None

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        now = time.monotonic()
        if self.stop_requested_at is None:
            self.stop_requested_at = now
        elif now - self.stop_requested_at > REPEAT_SIGNAL_WINDOW:
            # print() could interrupt a print() in progress and fail; a plain write cannot.
            os.write(sys.stderr.fileno(), b"go: killing everything now\n")
            for child in self.children:
                _signal_group(child, signal.SIGKILL)

    def run(self) -> None:
        host = env_str("HOST", "127.0.0.1")
        port = env_int("PORT", 8101, minimum=1)
        pool, concurrency, processes = worker_pool(), worker_concurrency(), worker_processes()
        model = local_model_to_serve()
        if model:
            _ensure_port_free(LOCAL_MODEL_HOST, model.port, "LOCAL_MODEL_PORT")
        demo_port = demo_model_port()
        if demo_port:
            # No model configured: the scripted demo answers in its place, for every child.
            _ensure_port_free(LOCAL_MODEL_HOST, demo_port, "DEMO_MODEL_PORT")
            self.spawn("demo model", [*DEMO_MODEL_ARGS, "--port", str(demo_port)], service=True)
            os.environ["LLM_BASE_URL"] = f"http://{LOCAL_MODEL_HOST}:{demo_port}/v1"
            os.environ["LLM_MODEL"] = DEMO_MODEL_NAME
        if not env_str("REDIS_URL"):
            self.valkey = EmbeddedValkey(self.var_dir)
            os.environ["REDIS_URL"] = self.valkey.start()
        if model:  # loading can take a while: it loads while the migrations run
            self.spawn("local model", LOCAL_MODEL_ARGS, service=True)
        # migrate, collectstatic, mcp_config.json (MCP_CONFIG_PATH) when present and changed
        # since its last import, and the first superuser: in one process.
        self.manage("prepare")
        if model:
            self.wait_until(
                lambda: local_model_ready(model),
                LOCAL_MODEL_READY_TIMEOUT,
                f"the local model did not answer on port {model.port}",
            )
            print(local_model_started(model), flush=True)
        if demo_port:
            self.wait_until(
                lambda: demo_model_ready(demo_port),
                READY_TIMEOUT,
                f"the demo model did not answer on port {demo_port}",
            )
            print(
                f"go: no LLM is configured, so the scripted demo answers (model "
                f"{DEMO_MODEL_NAME} at {os.environ['LLM_BASE_URL']}); set LLM_BASE_URL or "
                "LOCAL_MODEL to use a model",
                flush=True,
            )
        _ensure_port_free(host, port, "PORT")
        self.spawn("web", ["-m", "daphne", "-b", host, "-p", str(port), "config.asgi:application"])
        queue = f"--queues={os.environ.get('CELERY_QUEUE') or 'agentdesk'}"
        for number in range(1, processes + 1):
            name = "worker" if processes == 1 else f"worker {number}"
            hostname = "agentdesk@%h" if processes == 1 else f"agentdesk-{number}@%h"
            arguments = worker_arguments(pool, concurrency, hostname)
            self.spawn(name, [*arguments, queue], holds_runs=True)
        self.wait_until(
            lambda: _accepts_connections(host, port),
            READY_TIMEOUT,
            "the web server did not accept connections",
        )
        url = f"http://{host}:{port}"
        print(f"AgentDesk is running at {url}/ (API docs: {url}/api/docs)", flush=True)
        while True:
            if self.valkey is not None and self.valkey.supervise():
                # Its append-only file is written every second: the last messages may be lost.
                self.recoveries.append(time.monotonic())
            for child in self.children:
                self.supervise(child)
            self.recover_runs_when_due()
            self.pause()

    def manage(self, *args: str, must_succeed: bool = True) -> None:
        command = f"manage.py {' '.join(args)}"
        child = self.spawn(command, ["manage.py", *args])
        while (code := child.process.poll()) is None:
            self.pause()
        self.children.remove(child)
        if code == 0:
            return
        if must_succeed:
            raise LaunchError(f"`{command}` failed with exit code {code}")
        print(f"go: `{command}` failed with exit code {code}", file=sys.stderr, flush=True)

    def spawn(
        self, name: str, python_args: list[str], holds_runs: bool = False, service: bool = False
    ) -> Child:
        child = Child(
            name, python_args, _start(python_args), time.monotonic(), holds_runs, service=service
        )
        self.children.append(child)
        return child

    def recover_runs_when_due(self) -> None:
        """Queue again the runs no worker holds: a dead worker's once their leases have
        expired, and any whose message a dead Valkey lost. A new worker does so when it
        starts, but only for leases expired by then; the message of a run in flight comes
        back by itself only after CELERY_VISIBILITY_TIMEOUT (an hour)."""
        now = time.monotonic()
        if not any(due <= now for due in self.recoveries):
            return
        self.recoveries = [due for due in self.recoveries if due > now]
        if any(c.holds_runs and c.restart_at is not None for c in self.children):
            return  # a worker is still to start: it recovers them itself
        print("go: queueing again the runs no worker holds", flush=True)
        self.manage("runs_recover", must_succeed=False)

    def wait_until(self, ready: Callable[[], bool], timeout: float, failure: str) -> None:
        """Wait until `ready()`; a child that dies meanwhile, or `timeout`, is a LaunchError."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for child in self.children:
                if (code := child.process.poll()) is not None:
                    raise LaunchError(f"{child.name} {describe_exit(code)} while starting")
            if ready():
                return
            self.pause()
        raise LaunchError(f"{failure} within {timeout:.0f} s")

    def supervise(self, child: Child) -> None:
        """Notice a child's death and schedule its restart; restart it when its time comes."""
        now = time.monotonic()
        if child.restart_at is None:
            code = child.process.poll()
            if code is None:
                return
            # A worker's pool processes die with it (PDEATHSIG); anything else left in its
            # group would hold the port or the queue the new one needs.
            _signal_group(child, signal.SIGKILL)
            ran_for = now - child.started_at
            delay = child.backoff.delay_after(ran_for)
            child.restart_at = now + delay
            print(
                f"go: {child.name} (pid {child.process.pid}) {describe_exit(code)} after"
                f" {ran_for:.0f} s; restarting it in {delay:.0f} s",
                file=sys.stderr,
                flush=True,
            )
            if child.holds_runs:
                # A lease lasts RUN_LEASE_SECONDS (as in config/settings.py) from its last renewal.
                lease = env_float("RUN_LEASE_SECONDS", 30.0, minimum=1.0)
                self.recoveries.append(now + lease + RECOVERY_MARGIN)
        elif now >= child.restart_at:
            child.process = _start(child.python_args)
            child.started_at, child.restart_at = now, None
            print(f"go: {child.name} restarted (pid {child.process.pid})", flush=True)

    def pause(self) -> None:
        if self.stop_requested_at is not None:
            raise StopRequested
        time.sleep(POLL_INTERVAL)

    def shutdown(self) -> None:
        # In order: the web server stops taking work, the worker finishes what it has, the
        # local model and the broker go last. SIGTERM to the leader only: Celery's pool
        # processes die at once on SIGTERM, while the main worker process lets them finish
        # their tasks (warm shutdown). Then SIGKILL to the group, for anything the leader left
        # behind.
        for child in sorted(self.children, key=lambda child: child.service):
            if child.process.poll() is None:
                child.process.send_signal(signal.SIGTERM)
                deadline = time.monotonic() + SHUTDOWN_GRACE
                while time.monotonic() < deadline and child.process.poll() is None:
                    time.sleep(POLL_INTERVAL)
                if child.process.poll() is None:
                    print(f"go: {child.name} did not stop in time; killing it", file=sys.stderr)
            _signal_group(child, signal.SIGKILL)
            child.process.wait()
        self.children.clear()
        if self.valkey is not None:
            self.valkey.stop()
            self.valkey = None


def _start(python_args: list[str]) -> subprocess.Popen[bytes]:
    """Run this interpreter with `python_args` in a session of its own, sharing our output."""
    return subprocess.Popen(
        [sys.executable, *python_args],
        cwd=BASE_DIR,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )


def _signal_group(child: Child, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.process.pid, signum)


def _ensure_port_free(host: str, port: int, setting: str) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            raise LaunchError(
                f"cannot listen on {host}:{port} ({error.strerror});"
                f" set {setting} to use another port"
            ) from error


def _accepts_connections(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=1).close()
        return True
    except OSError:
        return False


# What `go` and every process it starts create is for this user only: var/ (the embedded
# Valkey makes it before settings could), the SQLite database, workspaces, agent logs, the
# collected static files (0700 directories, 0600 files).
PRIVATE_UMASK = 0o077


def main() -> None:
    os.umask(PRIVATE_UMASK)
    load_dotenv(BASE_DIR / ".env")
    var_dir = BASE_DIR / env_str("VAR_DIR", "var")
    var_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    launcher = Launcher(var_dir)
    signal.signal(signal.SIGINT, launcher.on_signal)
    signal.signal(signal.SIGTERM, launcher.on_signal)
    exit_code = 1
    try:
        launcher.run()
    except StopRequested:
        print("go: stopping (press Ctrl-C again to kill immediately)", flush=True)
        exit_code = 0
    except (LaunchError, ImproperlyConfigured) as error:
        print(f"go: {error}; stopping", file=sys.stderr)
    finally:
        launcher.shutdown()
    sys.exit(exit_code)


if __name__ == "__main__":
    main()
