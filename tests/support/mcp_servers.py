"""The reference MCP servers the tests talk to: npm's everything and filesystem servers
(installed into .mcp-servers/ by .ci/run, or here on first use), PyPI's time and git servers,
and our own tiny stdio echo server (echo_mcp_server.py, run as a script)."""

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

from config.env import BASE_DIR
from tests.support.processes import ManagedProcess, free_port, pid_with_env, port_open

NODE_DIR = BASE_DIR / ".mcp-servers"
NPM_PACKAGES = [
    "@modelcontextprotocol/server-everything@2026.8.31",
    "@modelcontextprotocol/server-filesystem@2026.8.31",
]
LOOPBACK = Path(__file__).with_name("loopback.cjs")
ECHO_SERVER = Path(__file__).with_name("echo_mcp_server.py")
LEAKY_SERVER = Path(__file__).with_name("leaky_mcp_server.py")
# A server whose tool changes between two checks (issue 35's pinned tools).
SHIFTY_SERVER = Path(__file__).with_name("shifty_mcp_server.py")
VENV_BIN = Path(sys.executable).parent


def ensure_node_servers() -> Path:
    modules = NODE_DIR / "node_modules" / "@modelcontextprotocol"

    def installed() -> bool:
        return (modules / "server-everything").exists() and (modules / "server-filesystem").exists()

    if installed():
        return modules
    NODE_DIR.mkdir(exist_ok=True)
    # Parallel test processes may all get here on a fresh checkout: one installs, the others
    # wait for it (two npm installs into one prefix would spoil it).
    with (NODE_DIR / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not installed():
            subprocess.run(
                [
                    "npm",
                    "install",
                    "--no-audit",
                    "--no-fund",
                    "--silent",
                    "--prefix",
                    str(NODE_DIR),
                    *NPM_PACKAGES,
                ],
                check=True,
                timeout=600,
            )
    return modules


def node() -> str:
    return shutil.which("node") or "node"


def everything_js() -> str:
    return str(ensure_node_servers() / "server-everything" / "dist" / "index.js")


def filesystem_js() -> str:
    return str(ensure_node_servers() / "server-filesystem" / "dist" / "index.js")


def everything_stdio_args() -> list[str]:
    return ["--require", str(LOOPBACK), everything_js(), "stdio"]


class KillableEverything:
    """A stdio server-everything configured in the database whose process a test can find and
    kill (SIGKILL), and which logs every request it reads (tests/support/loopback.cjs)."""

    def __init__(self, directory: Path) -> None:
        from tools_app.models import MCPServer

        self.marker = uuid.uuid4().hex
        self.requests = directory / "requests.log"
        self.server = MCPServer.objects.create(
            name="everything",
            transport="stdio",
            command=node(),
            args=everything_stdio_args(),
            env={
                "AGENTDESK_TEST_SERVER": self.marker,
                "AGENTDESK_TEST_REQUEST_LOG": str(self.requests),
            },
        )

    def has_read(self, text: str) -> bool:
        """Whether a request holding `text` has reached the server."""
        return self.requests.exists() and text in self.requests.read_text()

    def kill(self) -> None:
        os.kill(pid_with_env("AGENTDESK_TEST_SERVER", self.marker), signal.SIGKILL)


def python_server(name: str) -> str:
    """The console script of a PyPI MCP server installed in this venv (mcp-server-time, -git)."""
    return str(VENV_BIN / name)


class EverythingHttpServer(ManagedProcess):
    """server-everything over HTTP (`streamableHttp` or `sse`), bound to loopback."""

    def __init__(self, mode: str, log_dir: Path):
        self.mode = mode
        self.port = free_port()
        super().__init__(
            f"server-everything {mode}",
            log_dir / f"everything-{mode}.log",
            {**os.environ, "PORT": str(self.port)},
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{'mcp' if self.mode == 'streamableHttp' else 'sse'}"

    def start(self, timeout: float = 30.0) -> "EverythingHttpServer":
        self.spawn(
            [node(), "--require", str(LOOPBACK), everything_js(), self.mode],
            ready=lambda: port_open(self.port),
            timeout=timeout,
        )
        return self
