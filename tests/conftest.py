import time
from collections.abc import Iterator

import pytest
from channels.layers import DEFAULT_CHANNEL_LAYER, channel_layers
from django.core.management.base import CommandError
from django.test import TransactionTestCase

from agents_app.models import ApiKey
from tests.support.llm_server import ScriptedLLMServer
from tests.support.processes import stop_all, wait_until
from tests.support.stack import (
    GlobalState,
    Stack,
    own_stack,
    sending_to,
    stack_env,
    stack_queue,
)
from tests.support.throttle import clear_throttle_counts
from tests.support.worker import Worker, worker_idle
from tools_app.mcp.client import shutdown_pool

# The shared fixtures, registered once for every test: the personas and their clients
# (tests/support/personas.py), the real model's server (tests/support/local_model.py) and the
# rest (tests/support/fixtures.py).
pytest_plugins = ["tests.support.personas", "tests.support.fixtures", "tests.support.local_model"]

FLUSH_ATTEMPTS = 3


def flush_again_after_a_deadlock(teardown):
    """pytest-django empties the tables after a transactional test with one TRUNCATE of them
    all. On PostgreSQL a process of the test's stack still reading (a page's last request, a
    worker's periodic sweep) can deadlock with it, and PostgreSQL may pick the TRUNCATE as the
    victim: the flush then fails and the next test finds this one's rows. A deadlock's victim is
    tried again, as PostgreSQL advises; any other failure is raised."""

    def fixture_teardown(self):
        for attempt in range(1, FLUSH_ATTEMPTS + 1):
            try:
                return teardown(self)
            except CommandError as exc:
                if attempt == FLUSH_ATTEMPTS or "deadlock detected" not in str(exc.__cause__):
                    raise
                time.sleep(0.2 * attempt)

    return fixture_teardown


TransactionTestCase._fixture_teardown = flush_again_after_a_deadlock(
    TransactionTestCase._fixture_teardown
)

# Fixtures that start processes (daphne, Celery workers) for all the tests of their module or
# package. Under pytest-xdist those tests form a group that runs in one test process (see
# tests/parallel.py), which starts the processes once instead of each process its own copies.
# The session's live stack (tests/support/stack.py) needs no group: each process has its own.
PROCESS_FIXTURES = ("stack_processes", "web", "module_worker", "demo_go")


@pytest.hookimpl(tryfirst=True)  # before tests/parallel.py reads the marks
def pytest_collection_modifyitems(config, items):
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        if item.get_closest_marker("local_model") or "local_model" in item.fixturenames:
            # One group for all: one test process loads the model (tests/support/local_model.py).
            item.add_marker(pytest.mark.xdist_group("local_model"))
            continue
        for name in PROCESS_FIXTURES:
            if name in item.fixturenames:
                if name == "stack_processes" and not own_stack(item.module):
                    break  # the session's stack
                definition = item._fixtureinfo.name2fixturedefs[name][-1]
                where = item.module.__name__ if definition.scope == "module" else definition.baseid
                item.add_marker(pytest.mark.xdist_group(f"{name}:{where}"))
                break


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    """A test of a stack sends its runs to that stack's queue, from its first fixture on."""
    if {"stack", "shared_worker"} & set(item.fixturenames):
        module = (
            item.module if own_stack(item.module) or "shared_worker" in item.fixturenames else None
        )
        item._sending = sending_to(stack_queue(module))
        item._sending.__enter__()
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    try:
        return (yield)
    finally:
        sending = getattr(item, "_sending", None)
        if sending is not None:
            item._sending = None
            sending.__exit__(None, None, None)


@pytest.fixture(autouse=True)
def plain_static_storage(settings):
    """In-process tests render pages without running collectstatic first."""
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


@pytest.fixture(autouse=True, scope="session")
def boards_checked():
    """A worker's board of a plan's steps is told each change of a step's status
    (Step.set_status); in tests every use of a board compares it with its steps, so a change
    made another way fails the test that made it instead of deciding from a stale board."""
    from agents_app.worker import steps

    steps.CHECKED = True
    yield
    steps.CHECKED = False


@pytest.fixture(autouse=True)
def fresh_channel_layer():
    """Each test gets a channel layer of its own. The layer keeps state bound to the event loop
    of whoever receives (its receive lock and buffers, a pool per loop), and every in-process
    async test runs on a new loop: a receive cancelled as one test's socket closed must not
    leave the next test a lock bound to a loop that is gone. A layer's pools close with their
    loop (channels_redis wraps loop.close)."""
    channel_layers.backends.pop(DEFAULT_CHANNEL_LAYER, None)
    yield
    channel_layers.backends.pop(DEFAULT_CHANNEL_LAYER, None)


@pytest.fixture(autouse=True)
def fresh_throttle_counts():
    """Every test signs in and sends keys from 127.0.0.1, and the counts of failed sign-ins
    and refused keys (core/throttle) outlive a test in Redis, in this test process's own
    database and prefix (tests/embedded_services.py): one test's failures, in this process or
    its stack's, must not throttle the next test."""
    yield
    clear_throttle_counts()


@pytest.fixture(autouse=True)
def no_lingering_mcp_pool():
    """A run executed in the test process starts the process's MCP pool; close it after the
    test, or it would keep connecting to later tests' servers (spawning their stdio servers)."""
    yield
    shutdown_pool()


@pytest.fixture
def api_key_for():
    def make(user) -> bytes:
        """A new API key of `user`, as an Authorization header value."""
        raw = ApiKey.generate()
        key = ApiKey(user=user, name="ws")
        key.set_key(raw)
        key.save()
        return f"Bearer {raw}".encode()

    return make


@pytest.fixture(scope="session")
def llm_server():
    server = ScriptedLLMServer().start()
    yield server
    server.stop()


@pytest.fixture
def llm(llm_server, settings):
    """The scripted LLM, reset, and the web side configured to use it."""
    llm_server.reset()
    settings.LLM_BASE_URL = llm_server.base_url
    settings.LLM_MODEL = "scripted"
    return llm_server


@pytest.fixture(scope="session")
def live_stack(django_db_setup, llm_server, tmp_path_factory) -> Iterator[Stack]:
    """This test process's stack: daphne and a worker on the test database, each started when
    a test first asks for it (tests/support/stack.py)."""
    log_dir = tmp_path_factory.mktemp("live-stack")
    # Contract agents' logs, written by both, out of the checkout.
    env = stack_env(
        llm_server,
        stack_queue(),
        AGENT_LOG_DIR=str(log_dir / "agent-logs"),
        # Its worker outlives the browser tests: the pings of a later test's health check
        # (which expects no worker, or its own) must not reach it. Its daphne asks it alone.
        CELERY_CONTROL_EXCHANGE=stack_queue(),
    )
    stack = Stack(log_dir, env, "live", llm=llm_server)
    yield stack
    stack.stop()


@pytest.fixture
def start_worker(llm_server, tmp_path, transactional_db):
    """Start real Celery workers on demand; all are stopped after the test. A live shared
    worker is stopped first (the next test that needs it starts it again): it would connect to
    this test's MCP servers and take its runs."""
    Stack.stop_workers()
    workers: list[Worker] = []

    def start(name: str = "w1", concurrency: int = 8, **env: str) -> Worker:
        env.setdefault("LLM_BASE_URL", llm_server.base_url)
        env.setdefault("LLM_MODEL", "scripted")
        worker = Worker(name, tmp_path, concurrency=concurrency, **env).start()
        workers.append(worker)
        return worker

    yield start
    stop_all(workers)


@pytest.fixture(scope="module")
def module_worker_env() -> dict[str, str]:
    """More environment for the worker a module's tests share; a module overrides this."""
    return {}


@pytest.fixture(scope="module")
def module_worker(request, llm_server, django_db_setup, module_worker_env, tmp_path_factory):
    """The worker a module's tests share, on a queue of its own. Not the session's: a worker
    keeps what it learned of the scripted LLM and the connections between tasks."""
    env = stack_env(llm_server, stack_queue(request.module), **module_worker_env)
    own = Stack(tmp_path_factory.mktemp("worker"), env, "shared", llm=llm_server)
    yield own
    own.stop()


@pytest.fixture
def shared_worker(module_worker, transactional_db) -> Iterator[Worker]:
    """A real Celery worker that the tests of a module share: the first one starts it, the end
    of the module stops it. For tests that only need a worker to be
    there: not one that they stop, kill or pause, nor one that starts after their rows exist
    (its startup recovery and sweep); those use `start_worker`.

    `transactional_db` flushes the tables after each test, so each test ends by waiting until
    the worker has nothing left to do: no run of this test is still queued or executing on
    it, to write into the next test's tables. Ids are never reused after a flush, so a late
    timer or retry message of this test finds no row and does nothing. Between tasks the
    worker keeps its database connection (worker/connections.py; no rows with it) and one
    thing else: what the scripted LLM was found to reject, so tests that script its
    `options` need a worker of their own. A worker that does not go idle is killed (the next
    test gets a fresh one) and the test fails; so does a test that leaves the global state
    (kill switch, YOLO, MCP servers, rules) other than it found it."""
    worker = module_worker.running()
    before = GlobalState.read()
    yield worker
    if not wait_until(worker_idle, timeout=30):
        module_worker.kill()
        pytest.fail(f"the shared worker did not finish this test's work: {worker.log()[-3000:]}")
    left = before.changes(GlobalState.read())
    if left:
        pytest.fail(f"this test left the shared stack's global state changed: {left}")
