"""A run whose model keeps quiet (a CPU model reading a long prompt) says so on its page:
"Waiting for the model (N s)" after LLM_SILENCE_NOTICE_SECONDS (10) without a token or an
event, gone as soon as the model answers."""

import re

import pytest

from agents_app.models import Run, RunStatus
from tests.support.browser import PASSWORD, WAIT_MS, expect, log_in, run_id_of
from tests.support.script import plan_reply, step, verdict

pytestmark = pytest.mark.integration


@pytest.mark.slow(reason="waits out the 10 s of silence the notice is shown after")
def test_a_quiet_model_is_shown_as_waited_for_until_it_answers(page, stack, owner):
    stack.llm.script(
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [{**plan_reply(step("Say hello")), "hold": "quiet"}],
            },
            {"match": "AGENTDESK:STEP", "replies": [{"content": "hello"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "it said hello")]},
        ]
    )
    log_in(page, "owner", PASSWORD)
    page.goto("/tasks/new/")
    page.fill("#task-form textarea[name=task]", "Say hello, after some thought")
    page.click("#task-form button[type=submit]")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    notice = page.locator("#stream-silence")
    expect(page.locator("#run-status")).to_have_attribute("data-status", "planning")
    expect(notice).to_be_hidden()

    # Ten seconds of the planner's silence, then the line counts on.
    expect(notice).to_be_visible(timeout=WAIT_MS + 10_000)
    expect(notice).to_have_text(re.compile(r"^Waiting for the model \(1\d s\)…$"))
    first = int(re.search(r"\d+", notice.inner_text()).group())
    expect(notice).not_to_have_text(f"Waiting for the model ({first} s)…")
    # The panel's heading counts the phase's seconds too.
    expect(page.locator("#stream-elapsed")).to_have_text(re.compile(r"^· 1\d s$"))

    stack.llm.release("quiet")
    expect(notice).to_be_hidden(timeout=WAIT_MS)
    expect(page.locator("#run-status")).to_have_attribute(
        "data-status", "succeeded", timeout=WAIT_MS
    )
    assert Run.objects.get(pk=run_id_of(page)).status == RunStatus.SUCCEEDED
