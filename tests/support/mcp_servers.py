"""The reference MCP servers the tests talk to: npm's everything and filesystem servers
(installed into .mcp-servers/ by .ci/run, or here on first use), PyPI's time and git servers."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from config.env import BASE_DIR

NODE_DIR = BASE_DIR / ".mcp-servers"
NPM_PACKAGES = [
    "@modelcontextprotocol/server-everything@2026.8.31",
    "@modelcontextprotocol/server-filesystem@2026.8.31",
]
LOOPBACK = Path(__file__).with_name("loopback.cjs")
VENV_BIN = Path(sys.executable).parent


def ensure_node_servers() -> Path:
    modules = NODE_DIR / "node_modules" / "@modelcontextprotocol"
    if not (modules / "server-everything").exists() or not (modules / "server-filesystem").exists():
        NODE_DIR.mkdir(exist_ok=True)
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


def python_server(name: str) -> str:
    """The console script of a PyPI MCP server installed in this venv (mcp-server-time, -git)."""
    return str(VENV_BIN / name)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EverythingHttpServer:
    """server-everything over HTTP (`streamableHttp` or `sse`), bound to loopback."""

    def __init__(self, mode: str, log_dir: Path):
        self.mode = mode
        self.port = free_port()
        self.log_path = log_dir / f"everything-{mode}.log"
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{'mcp' if self.mode == 'streamableHttp' else 'sse'}"

    def start(self, timeout: float = 30.0) -> "EverythingHttpServer":
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [node(), "--require", str(LOOPBACK), everything_js(), self.mode],
            env={**os.environ, "PORT": str(self.port)},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"server-everything {self.mode} exited: {self.log_path.read_text()}"
                )
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            time.sleep(0.1)
        raise RuntimeError(f"server-everything {self.mode} did not listen in {timeout} s")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
