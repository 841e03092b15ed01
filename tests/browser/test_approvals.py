"""Approvals in a real browser: a run parks on a call that needs a person, its dialog opens
live on the run page, Approve lets the worker go on, and the run finishes live, no reload."""

import json
import re

import pytest

from agents_app.models import Approval, Run, RunStatus, ToolCall
from tests.support.browser import PASSWORD, WAIT_MS, expect, log_in, run_id_of
from tests.support.script import plan_reply, step, verdict
from tools_app.mcp.discovery import sync_builtin_tools
from tools_app.models import Tool
from tools_app.process_registry import get_registry
from tools_app.registry import ApprovalLevel

pytestmark = pytest.mark.integration

NOTE = {"path": "release-notes.md", "content": "# 2.4\n\n- Approvals for risky tool calls\n"}
REASONING = "The release notes belong in the workspace, so one write_file call saves them."


@pytest.fixture
def write_file_asks():
    """write_file is auto-approved by default; staff made it `moderate` (their Tool row)."""
    sync_builtin_tools(get_registry())
    Tool.objects.filter(name="write_file").update(approval_level=ApprovalLevel.MODERATE)


@pytest.mark.slow(reason="starts its module's daphne and worker (approval settings of their own)")
def test_a_call_waiting_for_approval_opens_its_dialog_live_and_approve_finishes_the_run(
    page, stack, owner, write_file_asks, screenshot
):
    stack.llm.script(
        [
            {
                "match": "AGENTDESK:PLAN",
                # A moment to load the run page, so the approval arrives over its socket.
                "replies": [
                    {
                        **plan_reply(step("Save the release notes", ["write_file"])),
                        "delay": 1,
                    }
                ],
            },
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [
                    {
                        "reasoning": REASONING,
                        "tool_calls": [{"name": "write_file", "arguments": NOTE}],
                    },
                    {"content": "release-notes.md is saved."},
                ],
            },
            {
                "match": "AGENTDESK:VERIFY",
                "replies": [verdict(True, "The notes are saved.", evidence=[1])],
            },
        ]
    )
    log_in(page, "owner", PASSWORD)
    page.goto("/tasks/new/")
    page.fill("#task-form textarea[name=task]", "Save the release notes for 2.4")
    page.click("#task-form button[type=submit]")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    page.evaluate("window.loadedOnce = 'yes'")  # gone if the page ever navigates or reloads
    run_id = run_id_of(page)

    dialog = page.locator("dialog#approval-dialog")
    expect(dialog).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#run-status")).to_have_attribute("data-status", "waiting_approval")
    expect(page.locator("#run-status")).to_have_text("waiting for approval")
    expect(dialog.locator(".approval-facts .tool-name")).to_have_text("write_file")
    expect(dialog.locator(".approval-facts .level")).to_have_text("moderate")
    assert json.loads(dialog.locator(".approval-arguments").text_content()) == NOTE
    expect(dialog.locator(".approval-reasoning")).to_contain_text(REASONING)
    expect(dialog.locator("textarea[name=arguments]")).to_be_hidden()  # inside "Modify"
    expect(page.locator("#nav-approvals")).to_be_visible()
    assert page.evaluate("window.loadedOnce") == "yes"
    screenshot(page, "approval-dialog.png")

    # Closing the dialog keeps the card, which opens it again.
    dialog.locator("button[data-close-dialog].close").click()
    expect(dialog).to_be_hidden()
    page.click("#approval-open")
    expect(dialog).to_be_visible()

    dialog.locator("button[name=decision][value=approve]").click()

    expect(page.locator("#approval-dialog")).to_have_count(0, timeout=WAIT_MS)
    expect(page.locator("#run-status")).to_have_attribute(
        "data-status", "succeeded", timeout=WAIT_MS
    )
    call = page.locator("#step-1-0 .tool-call")
    expect(call.locator(".badge")).to_have_attribute("data-status", "succeeded")
    expect(page.locator("#result .answer")).to_have_text("The notes are saved.")
    expect(page.locator("#event-log li[data-type=approval_decided]")).to_have_count(1)
    assert page.evaluate("window.loadedOnce") == "yes"

    approval = Approval.objects.get(run_id=run_id)
    assert (approval.status, approval.decided_by, approval.decided_via) == (
        "approved",
        owner,
        "web",
    )
    assert ToolCall.objects.get(run_id=run_id).status == "succeeded"
    assert Run.objects.get(pk=run_id).status == RunStatus.SUCCEEDED


@pytest.mark.slow(reason="parks a run on its module's stack and edits the call in the browser")
def test_a_refused_edit_shows_its_error_inside_the_open_dialog(page, stack, owner, write_file_asks):
    stack.llm.script(
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [plan_reply(step("Save the release notes", ["write_file"]))],
            },
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [
                    {"tool_calls": [{"name": "write_file", "arguments": NOTE}]},
                    {"content": "saved elsewhere"},
                ],
            },
            {
                "match": "AGENTDESK:VERIFY",
                "replies": [verdict(True, "Saved as notes.md.", evidence=[1])],
            },
        ]
    )
    log_in(page, "owner", PASSWORD)
    page.goto("/tasks/new/")
    page.fill("#task-form textarea[name=task]", "Save the release notes")
    page.click("#task-form button[type=submit]")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    run_id = run_id_of(page)
    dialog = page.locator("dialog#approval-dialog")
    expect(dialog).to_be_visible(timeout=WAIT_MS)

    dialog.locator("details.modify summary").click()
    dialog.locator("textarea[name=arguments]").fill('{"path": ')
    dialog.locator("button[name=decision][value=modify]").click()

    expect(dialog.locator(".error-box")).to_contain_text("The arguments are not valid JSON")
    expect(dialog).to_be_visible()
    expect(dialog.locator("textarea[name=arguments]")).to_have_value('{"path": ')
    assert Approval.objects.get(run_id=run_id).status == "pending"

    edited = {"path": "notes.md", "content": "2.4"}
    dialog.locator("textarea[name=arguments]").fill(json.dumps(edited))
    dialog.locator("button[name=decision][value=modify]").click()

    expect(page.locator("#approval-dialog")).to_have_count(0, timeout=WAIT_MS)
    expect(page.locator("#run-status")).to_have_attribute(
        "data-status", "succeeded", timeout=WAIT_MS
    )
    assert ToolCall.objects.get(run_id=run_id).arguments == edited
    assert Approval.objects.get(run_id=run_id).status == "modified"
