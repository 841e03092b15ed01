"""A contract agent's tab while its model works, in Chromium against daphne, a worker and the
scripted LLM: a quiet model is said to be waited for, then its reasoning and words stream into
the tab as they come, as a chat answer's do, and give way to the stored rows when the cycle
ends."""

import re

import pytest

from agents_app.models import ContractAgent
from tests.support.browser import PASSWORD, WAIT_MS, expect, log_in
from tests.support.script import json_reply

pytestmark = pytest.mark.integration

CONTRACT = "Say what you will do, then do it."


@pytest.mark.slow(reason="waits out the 10 s of silence the tab's notice is shown after")
def test_the_tab_waits_for_a_quiet_model_then_streams_what_it_writes(page, stack, owner):
    stack.llm.script(
        [
            {
                "match": "AGENTDESK:EVALUATE",
                "replies": [json_reply({"met": True, "reason": "it said so", "evidence": []})],
            },
            {
                "match": "AGENTDESK:CONTRACT",
                "replies": [
                    {
                        "hold": "quiet",
                        "reasoning": "First I plan.",
                        "chunks": ["I will ", "read the workspace, ", "then write ", "it up."],
                        "chunk_delay": 1,
                    }
                ],
            },
        ]
    )
    log_in(page, "owner", PASSWORD)
    page.goto("/chat/")
    page.click("a.agent-new")
    page.wait_for_url("/chat/agents/new/")
    page.fill("#agent-contract-new", CONTRACT)
    page.click(".agent-form button[type=submit]")
    page.wait_for_url(re.compile(r"/chat/agents/\d+/$"))
    panel = page.locator(f"#agent-panel-{ContractAgent.objects.get().pk}")
    expect(panel.locator(".live-indicator")).to_have_attribute("data-state", "live")

    # The model keeps quiet: after ten seconds the tab says so, counting on.
    notice = panel.locator(".agent-silence")
    expect(notice).to_be_visible(timeout=WAIT_MS + 10_000)
    expect(notice).to_have_text(re.compile(r"^Waiting for the model \(1\d s\)…$"))

    # It answers: its reasoning and words stream in before any row is stored.
    stack.llm.release("quiet")
    live = panel.locator(".agent-live")
    expect(live.locator(".chat-reasoning")).to_contain_text("First I plan.", timeout=WAIT_MS)
    expect(live).to_contain_text("I will read the workspace,", timeout=WAIT_MS)
    expect(notice).to_be_hidden()
    assert panel.locator(".agent-output .chat-answer").count() == 0

    # The cycle ends and the agent completes: the words are the stored rows now.
    expect(panel.locator(".agent-status")).to_have_text("Completed", timeout=WAIT_MS)
    expect(panel.locator(".agent-output .chat-answer")).to_contain_text(
        "I will read the workspace, then write it up."
    )
