"""The Files panel in a real browser: a run writes files, the panel lists them as they are
written, a click previews one (as text, never as HTML) and the step's write_file call links
to its file."""

import re

import pytest

from tests.support.browser import PASSWORD, WAIT_MS, expect, log_in
from tests.support.script import plan_reply, step, tool_call, verdict

pytestmark = pytest.mark.integration

ANSWER = (
    "# Release notes\n\n"
    "- Faster dashboard: runs load in one query.\n"
    "- Files panel: every run's workspace on its page.\n"
    "- <b>Escaped</b>: markup in a file is shown as text.\n"
)


def test_a_run_writes_files_and_the_files_panel_lists_and_previews_them(
    page, stack, owner, screenshot
):
    stack.llm.script(
        [
            {
                "match": "AGENTDESK:PLAN",
                # A moment to load the run page before any file exists.
                "replies": [
                    {
                        **plan_reply(
                            step("Write the release notes to answer.md", ["write_file"]),
                            step("Keep the raw data in data/changes.csv", ["write_file"]),
                        ),
                        "delay": 1,
                    }
                ],
            },
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [
                    tool_call("write_file", path="answer.md", content=ANSWER),
                    {"content": "answer.md is written."},
                ],
            },
            {
                "match": "AGENTDESK:STEP 1",
                "replies": [
                    tool_call(
                        "write_file",
                        path="data/changes.csv",
                        content="area,change\ndashboard,faster\nruns,files panel\n",
                    ),
                    {"content": "data/changes.csv is written."},
                ],
            },
            {
                "match": "AGENTDESK:VERIFY",
                "replies": [verdict(True, "The release notes are in answer.md.", evidence=[1, 2])],
            },
        ]
    )
    log_in(page, "owner", PASSWORD)
    page.goto("/tasks/new/")
    page.fill("#task-form textarea[name=task]", "Write this week's release notes to answer.md")
    page.click("#task-form button[type=submit]")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    page.evaluate("window.loadedOnce = 'yes'")
    expect(page.locator("#files .files-empty")).to_have_text("Files the run writes appear here.")

    # The tree fills in live as the run writes, without a reload.
    tree = page.locator("#files-tree")
    expect(tree.locator(".file-row[data-path='answer.md']")).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#run-status")).to_have_attribute(
        "data-status", "succeeded", timeout=WAIT_MS
    )
    expect(tree.locator(".file-row")).to_have_count(2)
    expect(tree.locator(".file-dir")).to_have_text("data/")
    assert page.evaluate("window.loadedOnce") == "yes"

    # The step's write_file call links to its file: the preview opens in the panel.
    page.locator("#step-1-1 .tool-file").click()
    preview = page.locator("#file-preview")
    expect(preview).to_have_attribute("data-path", "data/changes.csv")
    expect(preview.locator(".file-text")).to_contain_text("dashboard,faster")

    tree.locator(".file-name", has_text="answer.md").click()
    expect(preview).to_have_attribute("data-path", "answer.md")
    expect(preview.locator(".file-text")).to_have_text(ANSWER)
    # Shown as text: the file's markup made no element.
    expect(preview.locator("b")).to_have_count(0)
    assert page.evaluate("window.loadedOnce") == "yes"

    page.evaluate("document.getElementById('result').scrollIntoView()")
    screenshot(page, "files-panel.png")
