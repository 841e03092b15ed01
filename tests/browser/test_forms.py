"""Forms that stay in their place (issue 32, finding 9), in Chromium at a laptop's and a
phone's width: the "+ Chat" popover is closed until asked for and its selects stay inside its
box; the task form shows the team's options only once the team is chosen."""

import pytest

from tests.support.browser import PASSWORD, expect, log_in

pytestmark = pytest.mark.integration

SIZES = [{"width": 1366, "height": 800}, {"width": 390, "height": 844}]
# The right and left edges of the popover's box and of each of its fields, in CSS pixels.
EDGES_JS = """
form => [form, ...form.querySelectorAll("select, button")].map(e => {
  const box = e.getBoundingClientRect();
  return [box.left, box.right];
})
"""


@pytest.mark.parametrize("size", SIZES, ids=["laptop", "phone"])
def test_the_new_chat_popover_opens_on_request_and_its_selects_fit_its_box(
    page, stack, owner, size
):
    page.set_viewport_size(size)
    log_in(page, "owner", PASSWORD)
    page.goto("/chat/")
    popover = page.locator(".chat-new")
    expect(page.locator(".chat-empty")).to_be_visible()
    assert not popover.evaluate("details => details.open")  # nothing covers the page at first

    popover.locator("summary").click()
    form = page.locator(".chat-new-form")
    expect(form).to_be_visible()
    (left, right), *fields = form.evaluate(EDGES_JS)
    assert fields and all(left <= a and b <= right + 0.5 for a, b in fields), (left, right, fields)
    assert left >= 0 and right <= size["width"]


def test_the_team_options_show_once_the_team_is_chosen(page, stack, owner):
    log_in(page, "owner", PASSWORD)
    page.goto("/tasks/new/")
    options = page.locator("#team-options")
    expect(options).to_be_hidden()

    page.check("#task-form input[name=team]")
    expect(options).to_be_visible()
    expect(options.locator("select")).to_be_enabled()
    page.uncheck("#task-form input[name=team]")
    expect(options).to_be_hidden()
