"""The browser tests' tools: Playwright's sync API in a thread of its own, driven from the
test's thread, and signing in.

The sync API keeps an asyncio loop running in the thread that uses it, and Django refuses ORM
calls from a thread with a running loop (SynchronousOnlyOperation), pytest-django's flush after
each transactional test included. So the browser lives in its own thread, and tests hold
`Remote` proxies that run every attribute read and call there: Playwright code reads as usual,
and the test's thread stays free for the ORM.
"""

import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from playwright.sync_api import expect as playwright_expect
from playwright.sync_api import sync_playwright

WAIT_MS = 30_000  # generous for a busy machine; the scripts themselves are fast
PASSWORD = "owner-pass-123"  # the `owner` fixture's
# Debian's build of Chromium's headless shell (package chromium-headless-shell), the browser
# Playwright itself runs for headless tests: the same Blink, V8 and network stack as the desktop
# browser without its window and profile machinery; it took 105 s of processor time where
# `chromium --headless` took 134 for tests/browser/test_screens.py. Playwright never downloads
# a browser here.
CHROMIUM = "/usr/bin/chromium-headless-shell"
# The desktop browser, for what the shell lacks: it refuses notifications whatever a context
# grants (Notification.permission stays "denied"), so test_settings_page runs on this one.
DESKTOP_CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class BrowserThread:
    """One thread that owns Playwright and Chromium; `call` runs a function there."""

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="playwright")
        self._playwright: Any = None

    def call(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        return self._executor.submit(function, *args, **kwargs).result()

    def launch(self, executable: str = CHROMIUM) -> "Remote":
        def start() -> Any:
            self._playwright = sync_playwright().start()
            return self._playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)

        return Remote(self.call(start), self)

    def stop(self) -> None:
        if self._playwright is not None:
            self.call(self._playwright.stop)
        self._executor.shutdown()


def _unwrap(value: Any) -> Any:
    if isinstance(value, Remote):
        return value._target
    if isinstance(value, list | tuple):
        return type(value)(_unwrap(v) for v in value)
    if isinstance(value, dict):
        return {k: _unwrap(v) for k, v in value.items()}
    return value


class Remote:
    """A Playwright object that lives in the browser thread."""

    def __init__(self, target: Any, thread: BrowserThread) -> None:
        self._target = target
        self._thread = thread

    def _wrap(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self._wrap(v) for v in value]
        if type(value).__module__.startswith("playwright."):
            return Remote(value, self._thread)
        return value

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # not Playwright's API; also keeps copy/pickle from recursing
            raise AttributeError(name)
        value = self._thread.call(getattr, self._target, name)
        if not callable(value):
            return self._wrap(value)

        def method(*args: Any, **kwargs: Any) -> Any:
            return self._wrap(self._thread.call(value, *_unwrap(args), **_unwrap(kwargs)))

        return method

    def __repr__(self) -> str:
        return f"Remote({self._thread.call(repr, self._target)})"


# An assertion waits as long as an action may (Playwright's own default is 5 s): on a machine
# busy with the rest of the suite, Swagger UI once took longer than that to draw its title.
# It returns as soon as it holds, so a passing test waits no longer.
playwright_expect.set_options(timeout=WAIT_MS)


def expect(actual: Remote, message: str | None = None) -> Remote:
    """Playwright's `expect`, for a Remote page or locator."""
    return Remote(actual._thread.call(playwright_expect, actual._target, message), actual._thread)


def log_in(page: Remote, username: str, password: str, *, through_form: bool = False) -> None:
    """Sign `username` in to the page's browser context, then open the dashboard.

    By default with the session Django's login() makes (`Client.force_login`, written to the
    database the stack's daphne reads, signed with its key) as the context's session cookie: the login form's
    password check costs half a second of the server's processor time (PBKDF2, a million
    rounds) for every browser test. `through_form=True` signs in through the form with the
    password, as a person does (test_run_pages keeps one such test; tests/web has the form's
    own tests)."""
    if through_form:
        page.goto("/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", password)
        page.click("#login-form button[type=submit]")
        page.wait_for_url("/")
        return
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client, override_settings

    from tests.support.web import PRODUCTION_LIKE

    client = Client()
    # Signed with the key the stack's daphne has.
    with override_settings(SECRET_KEY=PRODUCTION_LIKE["SECRET_KEY"]):
        client.force_login(get_user_model().objects.get(username=username))
    session = client.cookies[settings.SESSION_COOKIE_NAME].value
    # Every stack serves on 127.0.0.1 (tests/support/web.py); a cookie is not port-bound.
    cookie = {"name": settings.SESSION_COOKIE_NAME, "value": session}
    page.context.add_cookies([{**cookie, "domain": "127.0.0.1", "path": "/"}])
    page.goto("/")
    page.wait_for_url("/")


def run_id_of(page) -> int:
    return int(re.search(r"/runs/(\d+)/$", page.url).group(1))
