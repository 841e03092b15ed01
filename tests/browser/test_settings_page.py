"""The Settings page in a real browser: a person creates an API key (shown once, copied),
uses it, revokes it; and opts in to browser notifications, which then tell them, on any page,
when a run of theirs waits for approval."""

import re

import httpx
import pytest

from agents_app.models import ApiKey, AuditInterface, Run, RunStatus
from agents_app.runs.services import task_submit
from tests.support.browser import PASSWORD, WAIT_MS, expect, log_in
from tests.support.script import plan_reply, step
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def browser(desktop_browser):
    """Chromium itself: its headless shell refuses notifications (tests/support/browser.py)."""
    return desktop_browser


# Records every Notification the page constructs (window.__notifications) instead of showing
# it: what the person would see, and its onclick to follow. Permission is the browser's own.
RECORD_NOTIFICATIONS = """
(() => {
  const Real = window.Notification;
  if (!Real) return;
  window.__notifications = [];
  function Recorded(title, options) {
    const notification = { title, options: options || {}, onclick: null, close() {} };
    window.__notifications.push(notification);
    return notification;
  }
  Object.defineProperty(Recorded, "permission", { get: () => Real.permission });
  Recorded.requestPermission = (...args) => Real.requestPermission(...args);
  window.Notification = Recorded;
})();
"""


def run_waiting_for_approval(settings, stack, owner, text: str) -> Run:
    """A run of `owner`, submitted as a script would (the stack's LLM, this process's database),
    once the worker has parked it on its plan."""
    stack.llm.script(
        [{"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("Draft the notes", []))]}]
    )
    settings.LLM_BASE_URL, settings.LLM_MODEL = stack.llm.base_url, "scripted"
    run = task_submit(owner=owner, interface=AuditInterface.API, text=text, approve_plan=True)
    wait_for(
        lambda: Run.objects.get(pk=run.pk).status == RunStatus.WAITING_APPROVAL,
        timeout=WAIT_MS / 1000 * 2,  # a worker on a busy 2-core machine
        message=f"run {run.pk} to wait for its plan's approval",
    )
    return run


def test_a_key_made_on_settings_is_shown_once_works_and_stops_when_revoked(
    page, stack, owner, screenshot
):
    page.context.grant_permissions(["clipboard-read", "clipboard-write", "notifications"])
    log_in(page, "owner", PASSWORD)
    page.goto("/settings/")
    expect(page.locator("#no-api-keys")).to_be_visible()

    page.fill("#api-key-name", "my phone")
    page.click("#api-key-form button[type=submit]")

    expect(page.locator("#new-api-key")).to_contain_text("you won't see it again")
    raw_key = page.locator("#new-api-key-value").input_value()
    assert raw_key.startswith("adk_")
    key = ApiKey.objects.get(user=owner)
    row = page.locator(f"#api-key-{key.pk}")
    expect(row.locator(".api-key-prefix")).to_have_text(f"{key.prefix}…")
    expect(row).to_have_attribute("data-state", "active")
    page.click("#copy-api-key")
    expect(page.locator("#copy-api-key-state")).to_have_text("Copied.")
    assert page.evaluate("navigator.clipboard.readText()") == raw_key
    page.evaluate("document.getElementById('api-keys').scrollIntoView()")
    screenshot(page, "settings-api-keys.png")

    headers = {"Authorization": f"Bearer {raw_key}"}
    assert httpx.get(f"{stack.url}/api/v1/runs", headers=headers).status_code == 200

    page.goto("/settings/")  # shown once: not on the next visit
    expect(page.locator("#new-api-key")).to_have_count(0)
    assert raw_key not in page.content()
    expect(row.locator(".api-key-name")).to_have_text("my phone")
    row.locator(".confirm-revoke summary").click()
    expect(row.locator(".confirm-revoke p")).to_contain_text("stop working at once")
    row.locator(f"#revoke-api-key-{key.pk}").click()

    expect(page.locator(".messages")).to_contain_text("Revoked “my phone”")
    expect(row).to_have_attribute("data-state", "revoked")
    expect(row.locator(".badge")).to_have_text("revoked")
    assert httpx.get(f"{stack.url}/api/v1/runs", headers=headers).status_code == 401


def test_a_run_waiting_for_approval_notifies_a_person_who_opted_in_and_the_click_opens_it(
    page, stack, owner, settings
):
    page.context.grant_permissions(["notifications"])
    page.add_init_script(RECORD_NOTIFICATIONS)
    log_in(page, "owner", PASSWORD)
    page.goto("/settings/")
    expect(page.locator("#notifications-state")).to_have_attribute("data-state", "off")
    expect(page.locator("html")).not_to_have_attribute("data-notices", "live")

    page.click("#notifications-toggle")

    expect(page.locator("#notifications-state")).to_have_attribute("data-state", "on")
    expect(page.locator("#notifications-toggle")).to_have_text("Turn off notifications")
    assert page.evaluate("localStorage.getItem('agentdesk.notifications')") == "on"
    # Remembered by this browser: another page listens too.
    page.goto("/")
    expect(page.locator("html")).to_have_attribute("data-notices", "live", timeout=WAIT_MS)

    run = run_waiting_for_approval(settings, stack, owner, "Draft the release notes")
    # A function, not an expression: Playwright evaluates a bare expression with eval, which
    # the page's Content-Security-Policy refuses.
    page.wait_for_function(
        "() => window.__notifications.length > 0", polling="raf", timeout=WAIT_MS
    )

    notifications = page.evaluate(
        "window.__notifications.map(n => ({title: n.title, options: n.options}))"
    )
    assert len(notifications) == 1
    assert notifications[0]["title"] == f"Run {run.pk} waits for your approval"
    assert notifications[0]["options"]["body"] == "its plan: Draft the release notes"
    assert notifications[0]["options"]["tag"].startswith("agentdesk-approval-")

    page.evaluate("window.__notifications[0].onclick()")

    page.wait_for_url(re.compile(rf"/runs/{run.pk}/$"))
    expect(page.locator("#run-status")).to_have_attribute("data-status", "waiting_approval")


def test_a_person_who_did_not_opt_in_gets_no_notification(page, stack, owner, settings):
    page.context.grant_permissions(["notifications"])  # allowed, but never turned on
    page.add_init_script(RECORD_NOTIFICATIONS)
    log_in(page, "owner", PASSWORD)
    page.goto("/settings/")
    expect(page.locator("#notifications-toggle")).to_have_text("Turn on notifications")

    run_waiting_for_approval(settings, stack, owner, "Draft the notes")
    # The header's own socket shows the pending count live; by then a notice would have come.
    expect(page.locator("#nav-approvals-count")).to_have_text("1", timeout=WAIT_MS)
    assert page.evaluate("window.__notifications.length") == 0
    expect(page.locator("html")).not_to_have_attribute("data-notices", "live")
