"""Chromium, driven by Playwright, against the stack `uv run go` runs: daphne with DEBUG off
after collectstatic, a Celery worker and Redis, all on pytest-django's test database. The LLM
is the scripted server, the one stand-in.

daphne and the worker are the test process's live stack (tests/support/stack.py), started
once for every browser test of the process and the other tests of a shared worker; a module
with `STACK_ENV` gets its own. That is safe with `transactional_db` flushing the
tables between tests because neither keeps anything between two requests or two tasks but their
connections, and each test waits for the worker to go idle before the flush.
"""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents_app.models import Run
from config.env import BASE_DIR
from tests.support.browser import CHROMIUM, DESKTOP_CHROMIUM, WAIT_MS, BrowserThread, Remote
from tests.support.stack import GlobalState, Stack, own_stack, stack_env, stack_queue
from tests.support.waiting import wait_for

VIEWPORT = {"width": 1280, "height": 900}


SCREENSHOTS = BASE_DIR / "docs" / "screenshots"


_HASHES: dict[str, str] = {}  # password -> its hash by the production hasher, once a process


@pytest.fixture
def fast_password_hashing(monkeypatch):
    """The suite's fast hasher (tests/support/personas.py) turned off: the browser signs in
    through daphne, whose settings lack it, so passwords are hashed as in production. Each
    password is hashed once per test process (some half a second of CPU each time), and daphne
    still checks every sign-in against that hash."""
    from django.contrib.auth import base_user, hashers

    def make_password(password, salt=None, hasher="default"):
        if salt is not None or hasher != "default" or not isinstance(password, str):
            return hashers.make_password(password, salt, hasher)
        if password not in _HASHES:
            _HASHES[password] = hashers.make_password(password)
        return _HASHES[password]

    monkeypatch.setattr(base_user, "make_password", make_password)


def launched(executable: str, package: str) -> Iterator[Remote]:
    if not Path(executable).exists() and not os.environ.get("CI"):
        # A fresh checkout may not have the browser yet; CI installs it and must run these.
        pytest.skip(f"no {executable}: `apt-get install {package}` to run the browser tests")
    thread = BrowserThread()
    browser = thread.launch(executable)
    yield browser
    browser.close()
    thread.stop()


@pytest.fixture(scope="session")
def browser():
    """The headless shell, one a test process."""
    yield from launched(CHROMIUM, "chromium-headless-shell")


@pytest.fixture(scope="module")
def desktop_browser():
    """Chromium itself, for a module that needs what the shell lacks (`browser = desktop_browser`
    in the module: notifications)."""
    yield from launched(DESKTOP_CHROMIUM, "chromium")


@pytest.fixture(scope="module")
def stack_processes(request, live_stack, llm_server, tmp_path_factory) -> Iterator[Stack]:
    """The session's stack, or the module's own when it sets `STACK_ENV = {...}` (settings of
    its own for both processes)."""
    if not own_stack(request.module):
        yield live_stack
        return
    log_dir = tmp_path_factory.mktemp("stack")
    env = stack_env(
        llm_server,
        stack_queue(request.module),
        AGENT_LOG_DIR=str(log_dir / "agent-logs"),
        **request.module.STACK_ENV,
    )
    own = Stack(log_dir, env, "browser", llm=llm_server)
    yield own
    own.stop()


def _worker_idle() -> bool:
    return not Run.objects.exclude(lease_owner="").exists()


@pytest.fixture
def stack(stack_processes, transactional_db) -> Iterator[Stack]:
    """The running stack (daphne and a worker), with the scripted LLM reset for this test; the
    test must leave its global state as it found it (tests/support/stack.py)."""
    stack_processes.llm.reset()
    stack_processes.running()
    stack_processes.web  # noqa: B018  (started here, not inside the test's first request)
    before = GlobalState.read()
    yield stack_processes
    # A run still on the worker would write into the next test's tables after the flush.
    try:
        wait_for(_worker_idle, timeout=30, message="the worker to finish this test's runs")
    except AssertionError:
        stack_processes.kill()
        raise
    left = before.changes(GlobalState.read())
    assert not left, f"this test left the shared stack's global state changed: {left}"


@pytest.fixture
def page(browser, stack):
    """A fresh browser context (no cookies) on the stack, 1280×900; fails on uncaught JS errors
    and on anything the Content-Security-Policy refused."""
    context = browser.new_context(base_url=stack.url, viewport=VIEWPORT)
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))

    def refused(message):
        if "Content Security Policy" in message.text:
            errors.append(message.text)

    page.on("console", refused)
    yield page
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


@pytest.fixture
def screenshot(tmp_path):
    """Save a page's picture: into docs/screenshots (the README's) when
    AGENTDESK_UPDATE_SCREENSHOTS=1, otherwise into the test's own directory, so a test run
    leaves the checkout as it found it."""
    directory = SCREENSHOTS if os.environ.get("AGENTDESK_UPDATE_SCREENSHOTS") == "1" else tmp_path

    def save(page: Remote, name: str) -> Path:
        path = directory / name
        page.screenshot(path=str(path), animations="disabled")
        assert path.stat().st_size > 0
        return path

    return save
