"""A contract agent's tab in Chromium against daphne, a real worker and the scripted LLM: [+ Agent],
Start, the output streaming in (calls, evaluations) while it runs, Completed by its own
evaluation, the log downloaded; then Restart with the contract edited, and Stop while the second
attempt's model request is in flight: Stopped by the person, no request after it. The README's
picture of an agent tab is taken on the way."""

import re

import pytest

from agents_app.models import ContractAgent, Run, RunStatus
from tests.support.browser import PASSWORD, WAIT_MS, expect, log_in
from tests.support.script import json_reply, messages_text, tool_call
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

CONTRACT = "Write a three-day Lisbon plan into plan.md and check that it names Sintra."
AGAIN = "Write a Porto plan into porto.md. SECOND ATTEMPT."
PLAN = {"path": "plan.md", "content": "# Lisbon\n\n1. Alfama\n2. Belém\n3. Sintra\n"}
# Slower than the time the test needs to see the request and press Stop, so Stop lands while
# the model is still answering; the attempt then ends once that answer is in.
SLOW_SECONDS = 4


def evaluation(met: bool, reason: str, *evidence: int) -> dict:
    return json_reply({"met": met, "reason": reason, "evidence": list(evidence)})


def second_attempt_requests(stack) -> list[str]:
    return [
        messages_text(body.get("messages", []))
        for body in stack.llm.requests
        if "SECOND ATTEMPT" in messages_text(body.get("messages", []))
    ]


@pytest.mark.slow(
    reason="starts its module's daphne and worker, then three attempts of an agent in the browser"
)
def test_an_agent_completes_by_its_own_evaluation_then_is_restarted_and_stopped(
    page, stack, owner, screenshot
):
    stack.llm.script(
        [
            {
                "match": "AGENTDESK:EVALUATE",
                "replies": [
                    evaluation(False, "plan.md is written but not checked yet", 1),
                    evaluation(True, "plan.md names Alfama, Belém and Sintra", 1, 2),
                ],
            },
            {
                "match": "AGENTDESK:CONTRACT",
                "replies": [
                    {**tool_call("write_file", **PLAN), "content": "Writing **plan.md**."},
                    # The second cycle waits a little: the first one's evaluation is seen live.
                    {**tool_call("read_file", path="plan.md"), "delay": 1},
                    # The second attempt: slow, so Stop lands while it is asked.
                    {"content": "Porto: Ribeira, Livraria Lello…", "delay": SLOW_SECONDS},
                ],
            },
        ]
    )
    log_in(page, "owner", PASSWORD)
    page.goto("/chat/")
    page.click("a.agent-new")
    page.wait_for_url("/chat/agents/new/")
    expect(page.locator("#agent-tab-new")).to_contain_text("Agent-1")
    page.fill("#agent-contract-new", CONTRACT)
    page.click(".agent-form button[type=submit]")
    page.wait_for_url(re.compile(r"/chat/agents/\d+/$"))
    agent = ContractAgent.objects.get()
    panel = page.locator(f"#agent-panel-{agent.pk}")
    status = panel.locator(".agent-status")

    # While it runs: the first cycle's call and evaluation stream in, the badge says Running.
    page.wait_for_function(
        """id => {
            const panel = document.getElementById(`agent-panel-${id}`);
            const note = panel && panel.querySelector(".agent-note[data-met=false]");
            const badge = panel && panel.querySelector(".agent-status");
            return note && badge.textContent === "Running"
                && panel.querySelector(".chat-call .chat-call-short").textContent.startsWith("write_file(");
        }""",
        arg=agent.pk,
        polling="raf",
        timeout=WAIT_MS,
    )
    expect(panel.locator(".agent-note").first).to_have_text(
        "Evaluation after cycle 1: not met — plan.md is written but not checked yet"
    )
    expect(panel.locator(".agent-stop button")).to_be_enabled()

    # Completed by its own evaluation: the tab offers Restart with the contract editable.
    expect(status).to_have_text("Completed")
    expect(panel.locator(".agent-reason")).to_have_text("plan.md names Alfama, Belém and Sintra")
    expect(panel.locator(".agent-note")).to_have_count(2)
    expect(panel.locator(".agent-output .chat-call")).to_have_count(2)
    expect(panel.locator(".agent-output .chat-answer strong")).to_have_text("plan.md")
    contract = panel.locator(f"#agent-contract-{agent.pk}")
    expect(contract).to_have_value(CONTRACT)
    panel.locator(".agent-output .chat-call summary").first.click()
    screenshot(page, "agent.png")

    log = page.request.get(panel.locator(".agent-log").get_attribute("href"))
    assert log.status == 200 and log.headers["content-type"] == "text/plain; charset=utf-8"
    assert "[evaluation] contract met: plan.md names Alfama, Belém and Sintra" in log.text()

    # Restart with another contract; Stop while its model request is in flight.
    contract.fill(AGAIN)
    panel.locator(".agent-form button[type=submit]").click()
    expect(status).to_have_text("Running")
    wait_for(lambda: second_attempt_requests(stack), timeout=WAIT_MS / 1000, message="the request")
    panel.locator(".agent-stop button").click()

    # The attempt ends once the answer in flight is in (SLOW_SECONDS after it was asked):
    # longer than expect's 5 s default on a busy machine.
    expect(status).to_have_text("Stopped", timeout=WAIT_MS)
    expect(panel.locator(".agent-reason")).to_have_text("stopped by the person")
    expect(panel.locator(".agent-earlier li")).to_have_count(1)
    expect(panel.locator(".agent-earlier li")).to_contain_text("Attempt 1: Completed")
    first, second = Run.objects.order_by("id")
    assert (first.status, second.status) == (RunStatus.SUCCEEDED, RunStatus.CANCELLED)
    # The answer in flight was let finish; nothing was asked after it (no evaluation either).
    assert len(second_attempt_requests(stack)) == 1
    expect(panel.locator(".agent-output .chat-user")).to_have_text(AGAIN)
