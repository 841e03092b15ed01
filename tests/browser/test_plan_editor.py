"""The plan editor in a real browser (issue 32, finding 6): a plan shown first is edited down to
one write step in its form (a step removed over htmx, the note typed), runs as edited, and the
verifier judges the task as the person reshaped it: the run succeeds and says who edited it."""

import re

import pytest

from agents_app.models import Plan
from tests.support.browser import PASSWORD, WAIT_MS, expect, log_in, run_id_of
from tests.support.script import plan_reply, step, verdict
from tools_app.mcp.discovery import sync_builtin_tools
from tools_app.process_registry import get_registry

pytestmark = pytest.mark.integration

TASK = "Read notes.txt and write its summary to summary.md"
NOTE = "Skip the notes: hello.txt with hello is all I need."


@pytest.mark.slow(reason="parks a run on its plan on the stack and edits it in the browser")
def test_a_plan_edited_in_its_form_runs_and_is_judged_as_the_person_reshaped_it(page, stack, owner):
    sync_builtin_tools(get_registry())  # the tools the editor offers and the service checks
    stack.llm.script(
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [
                    plan_reply(
                        step("Read notes.txt", ["read_file"]),
                        step("Write the summary to summary.md", ["write_file"], [0]),
                    )
                ],
            },
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [
                    {
                        "tool_calls": [
                            {
                                "name": "write_file",
                                "arguments": {"path": "hello.txt", "content": "hello"},
                            }
                        ]
                    },
                    {"content": "hello.txt holds hello."},
                ],
            },
            # Complete only when the task it is shown is the person's.
            {
                "match": ["AGENTDESK:VERIFY", "Task: Write hello to hello.txt."],
                "replies": [verdict(True, "hello.txt holds hello.", evidence=[1])],
            },
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(False, "")]},
        ]
    )
    log_in(page, "owner", PASSWORD)
    page.goto("/tasks/new/")
    page.fill("#task-form textarea[name=task]", TASK)
    page.check("#task-form input[name=approve_plan]")
    page.click("#task-form button[type=submit]")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    run_id = run_id_of(page)

    dialog = page.locator("dialog#approval-dialog")
    expect(dialog).to_be_visible(timeout=WAIT_MS)
    dialog.locator("details.plan-editor > summary").click()
    steps = dialog.locator(".plan-editor-step")
    expect(steps).to_have_count(2)
    expect(steps.nth(1).locator("input[name$=depends_on]")).to_have_value("1")
    # On a phone the editor fits its dialog: nothing wider than the screen.
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert dialog.evaluate("d => d.scrollWidth <= d.clientWidth")
    page.set_viewport_size({"width": 1280, "height": 900})

    steps.nth(0).get_by_role("button", name="Remove step 1").click()

    steps = page.locator("dialog#approval-dialog .plan-editor-step")
    expect(steps).to_have_count(1)
    expect(steps.nth(0).locator("input[name$=depends_on]")).to_have_value("")
    dialog = page.locator("dialog#approval-dialog")
    expect(dialog).to_be_visible()
    steps.nth(0).locator("input[name$=objective]").fill("Write hello to hello.txt")
    dialog.locator("textarea[name=edit_note]").fill(NOTE)
    dialog.get_by_role("button", name="Run the edited plan").click()

    expect(page.locator("#run-status")).to_have_attribute(
        "data-status", "succeeded", timeout=WAIT_MS
    )
    expect(page.locator("#run-meta .replans")).to_contain_text("1 edited")
    expect(page.locator("#event-log")).to_contain_text("edited by owner")
    edited = Plan.objects.get(run_id=run_id, version=2)
    assert [s["objective"] for s in edited.raw["steps"]] == ["Write hello to hello.txt"]
    assert edited.raw["edited"] == {"by": "owner", "note": NOTE}
