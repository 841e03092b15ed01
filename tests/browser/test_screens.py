"""Every main page on a phone, on a laptop and in dark mode: at 390 px nothing is wider than the
screen and the nav is one Menu button away (mouse or keyboard); at 1366 px the nav is inline;
with the system in dark mode the pages are dark with light text, and every status badge is
readable in both modes."""

import pytest
from django.db import transaction

from agents_app.approvals.rules import rule_create, rule_revoke
from agents_app.models import Approval, AuditInterface
from agents_app.runs.services import run_cancel
from tests.support.approvals import pending
from tests.support.browser import PASSWORD, expect, log_in
from tests.support.runs import add_plan, complete_step, fail, make_run, succeed

pytestmark = pytest.mark.integration

PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1366, "height": 900}
NAV = ["Dashboard", "New task", "Tools", "Metrics", "Approvals", "Settings"]
# A word no line break can split and a URL: both must wrap or scroll inside their box.
LONG_WORD = "Supercalifragilisticexpialidocious" * 3
LONG_URL = "https://example.com/reports/2026/" + "quarterly-" * 12 + "summary.pdf"
STATUSES = [
    "queued",
    "pending",
    "planning",
    "running",
    "verifying",
    "succeeded",
    "completed",
    "failed",
    "timeout",
    "broken",
    "active",
    "disabled",
    "cancelled",
    "skipped",
    "paused",
    "waiting_approval",
    "approved",
    "modified",
    "denied",
    "void",
]

# WCAG's contrast ratio of two computed CSS colours ("rgb(r, g, b)"), computed in the page.
CONTRAST_JS = """
([foreground, background]) => {
  const channels = c => c.match(/[\\d.]+/g).slice(0, 3).map(Number);
  const luminance = c => {
    const [r, g, b] = channels(c).map(v => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [a, b] = [luminance(foreground), luminance(background)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}
"""
LUMINANCE_JS = """
color => {
  const [r, g, b] = color.match(/[\\d.]+/g).slice(0, 3).map(v => {
    v = Number(v) / 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
"""


@pytest.fixture
def runs(owner):
    """The owner's runs in several states, the first finished with long words and a URL in it,
    a call waiting for approval, and a rule: every main page has rows to lay out."""
    # make_run's run_create locks the task row, which PostgreSQL refuses in autocommit.
    with transaction.atomic():
        done = make_run(owner, f"Summarise the quarterly report at {LONG_URL} {LONG_WORD}")
        plan = add_plan(done, ["Read the report", f"Write the summary {LONG_WORD}"])
        complete_step(done, plan, 0, output=f"Read {LONG_URL}")
        complete_step(done, plan, 1, arguments={"path": f"{LONG_WORD}.md", "url": LONG_URL})
        succeed(done, f"The summary is in summary.md; the source was {LONG_URL}.")
        fail(make_run(owner, "Download the invoices from the vendor portal"), "TOOL_FAILED", "403")
        run_cancel(
            run=make_run(owner, "Translate the handbook into German"),
            actor=owner,
            interface=AuditInterface.WEB,
        )
        working = make_run(owner, "Check every link in the docs")
        complete_step(working, add_plan(working, ["List links", "Fetch each", "Report"]), 0)
        asking = pending(owner, tool="http_get")
        Approval.objects.filter(pk=asking.pk).update(arguments={"url": LONG_URL})
        rule = rule_create(
            owner_id=owner.pk,
            tool="write_file",
            arguments={"path": f"{LONG_WORD}.txt", "content": LONG_URL},
            actor=owner,
            interface=AuditInterface.WEB,
        )
    yield {"finished": done}
    # The stack is shared: it must find no rule of this test's (tests/support/stack.py).
    rule_revoke(rule=rule, actor=owner, interface=AuditInterface.WEB)


def pages(runs):
    return {
        "dashboard": "/",
        "run page": f"/runs/{runs['finished'].pk}/",
        "new task": "/tasks/new/",
        "approvals": "/approvals/",
        "settings": "/settings/",
        "tools": "/tools/",
        "metrics": "/agent-metrics/",
    }


PAGES = ["dashboard", "run page", "new task", "approvals", "settings", "tools", "metrics"]


def document_width(page) -> int:
    return page.evaluate(
        "Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
    )


def open_at(page, runs, name, viewport):
    page.set_viewport_size(viewport)
    page.goto(pages(runs)[name])
    page.wait_for_load_state("load")


@pytest.mark.parametrize("name", PAGES)
def test_on_a_phone_a_page_is_no_wider_than_the_screen(page, stack, owner, runs, name):
    log_in(page, "owner", PASSWORD)
    open_at(page, runs, name, PHONE)
    assert document_width(page) <= PHONE["width"]
    # Opening the menu widens nothing either.
    page.click(".menu-toggle")
    expect(page.locator(".site-nav")).to_be_visible()
    assert document_width(page) <= PHONE["width"]


@pytest.mark.parametrize("name", PAGES)
def test_on_a_phone_the_nav_is_behind_a_menu_button_that_works_by_keyboard(
    page, stack, owner, runs, name
):
    log_in(page, "owner", PASSWORD)
    open_at(page, runs, name, PHONE)
    toggle = page.locator(".menu-toggle")
    expect(toggle).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(page.locator(".site-nav")).to_be_hidden()

    toggle.focus()
    page.keyboard.press("Enter")
    expect(toggle).to_have_attribute("aria-expanded", "true")
    for label in NAV:
        link = page.locator(".site-nav a", has_text=label)
        expect(link).to_be_visible()
        box = link.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], label
    expect(page.locator(".logout button")).to_be_visible()

    # Escape closes it and gives the focus back to the button; Space opens it again.
    page.keyboard.press("Escape")
    expect(page.locator(".site-nav")).to_be_hidden()
    expect(toggle).to_be_focused()
    page.keyboard.press("Space")
    expect(page.locator(".site-nav")).to_be_visible()


def test_on_a_phone_a_link_in_the_menu_opens_its_page(page, stack, owner, runs):
    log_in(page, "owner", PASSWORD)
    open_at(page, runs, "dashboard", PHONE)
    page.click(".menu-toggle")
    page.locator(".site-nav a", has_text="Tools").click()
    page.wait_for_url("/tools/")
    expect(page.locator(".site-nav")).to_be_hidden()  # a new page starts with it closed
    expect(page.locator("#tool-write_file")).to_be_visible()


def test_on_a_phone_the_dashboard_shows_every_runs_status_and_progress(
    page, stack, owner, runs, screenshot
):
    log_in(page, "owner", PASSWORD)
    open_at(page, runs, "dashboard", PHONE)
    rows = page.locator("#runs tbody tr")
    expect(rows).to_have_count(5)
    for index in range(5):
        row = rows.nth(index)
        for cell in ("td[data-label=Status] .badge", "td[data-label=Progress] .mini-progress"):
            target = row.locator(cell)
            target.scroll_into_view_if_needed()
            expect(target).to_be_in_viewport()
            box = target.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], cell
    statuses = page.locator("#runs tbody .badge").evaluate_all(
        "badges => badges.map(b => b.dataset.status)"
    )
    assert sorted(statuses) == ["cancelled", "failed", "queued", "running", "succeeded"]
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "dashboard-phone.png")


def test_on_a_phone_the_run_pages_panels_stack(page, stack, owner, runs, screenshot):
    log_in(page, "owner", PASSWORD)
    open_at(page, runs, "run page", PHONE)
    plan = page.locator(".run-grid > :first-child").bounding_box()
    stream = page.locator("#stream").locator("xpath=..").bounding_box()
    assert stream["y"] >= plan["y"] + plan["height"]  # under the plan, not beside it
    assert abs(stream["x"] - plan["x"]) < 2 and abs(stream["width"] - plan["width"]) < 2
    expect(page.locator("#run-status")).to_have_attribute("data-status", "succeeded")
    screenshot(page, "run-page-phone.png")


@pytest.mark.parametrize("name", PAGES)
def test_on_a_laptop_the_nav_shows_inline_without_a_menu_button(page, stack, owner, runs, name):
    log_in(page, "owner", PASSWORD)
    open_at(page, runs, name, LAPTOP)
    expect(page.locator(".menu-toggle")).to_be_hidden()
    header = page.locator(".site-header").bounding_box()
    tops = set()
    for label in NAV:
        link = page.locator(".site-nav a", has_text=label)
        expect(link).to_be_visible()
        box = link.bounding_box()
        assert (
            header["y"] <= box["y"] and box["y"] + box["height"] <= header["y"] + header["height"]
        )
        tops.add(round(box["y"]))
    assert len(tops) == 1, "the nav's links sit on one line"
    assert document_width(page) <= LAPTOP["width"]


@pytest.mark.parametrize("name", PAGES)
def test_in_dark_mode_a_page_is_dark_with_light_text(page, stack, owner, runs, name, screenshot):
    log_in(page, "owner", PASSWORD)
    page.emulate_media(color_scheme="dark")
    open_at(page, runs, name, LAPTOP)
    background, color = page.evaluate(
        "() => { const s = getComputedStyle(document.body); return [s.backgroundColor, s.color]; }"
    )
    assert page.evaluate(LUMINANCE_JS, background) < 0.05, background
    assert page.evaluate(LUMINANCE_JS, color) > 0.6, color
    heading = page.locator("h1").first
    assert page.evaluate(LUMINANCE_JS, heading.evaluate("h => getComputedStyle(h).color")) > 0.6
    if name == "dashboard":
        screenshot(page, "dashboard-dark.png")


def test_in_light_mode_a_page_is_light_with_dark_text(page, stack, owner, runs):
    log_in(page, "owner", PASSWORD)
    page.emulate_media(color_scheme="light")
    open_at(page, runs, "dashboard", LAPTOP)
    background, color = page.evaluate(
        "() => { const s = getComputedStyle(document.body); return [s.backgroundColor, s.color]; }"
    )
    assert page.evaluate(LUMINANCE_JS, background) > 0.8, background
    assert page.evaluate(LUMINANCE_JS, color) < 0.05, color


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_status_badge_and_the_muted_text_are_readable(page, stack, owner, runs, scheme):
    log_in(page, "owner", PASSWORD)
    page.emulate_media(color_scheme=scheme)
    open_at(page, runs, "dashboard", LAPTOP)
    # One badge of every status the pages show, on a card, as the pages place them.
    ratios = page.evaluate(
        """statuses => {
            const ratio = CONTRAST;
            const card = document.createElement("div");
            card.className = "card";
            document.querySelector("main").append(card);
            const result = {};
            for (const status of statuses) {
                const badge = document.createElement("span");
                badge.className = "badge";
                badge.dataset.status = status;
                badge.textContent = status;
                card.append(badge);
                const style = getComputedStyle(badge);
                result[status] = ratio([style.color, style.backgroundColor]);
            }
            const muted = document.createElement("p");
            muted.className = "muted";
            card.append(muted);
            result.muted = ratio([getComputedStyle(muted).color, getComputedStyle(card).backgroundColor]);
            return result;
        }""".replace("CONTRAST", CONTRAST_JS.strip()),
        STATUSES,
    )
    unreadable = {status: round(ratio, 2) for status, ratio in ratios.items() if ratio < 4.5}
    assert not unreadable, f"below 4.5:1 in {scheme} mode: {unreadable}"
