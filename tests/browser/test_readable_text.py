"""The run page in a real browser reads as text: the plan forms as numbered steps in the
streaming panel while the planner writes its JSON, the final answer stays there (rendered
Markdown) after the run, and the planner's reasoning stays in the reasoning panel."""

import json
import re

import pytest

from tests.support.browser import PASSWORD, WAIT_MS, expect, log_in
from tests.support.script import step

pytestmark = pytest.mark.integration

PLAN = json.dumps(
    {
        "steps": [
            step("Read the meeting notes"),
            step("Write the summary of the decisions"),
        ]
    }
)
PLANNER_THINKS = "Reading comes first, then the summary."
ANSWER = "## Summary\n\n- ship on **Friday**\n- night queue for imports"

# Records whether the streaming panel ever held the JSON the planner writes, at any moment.
WATCH_STREAM = """() => {
    window.streamTexts = [];
    const card = document.getElementById("stream").closest("section");
    new MutationObserver(() => {
        const stream = document.getElementById("stream");
        if (stream) window.streamTexts.push(stream.textContent);
    }).observe(card, {subtree: true, childList: true, characterData: true});
}"""


def test_the_streaming_panel_shows_the_plan_forming_and_keeps_the_final_answer(page, stack, owner):
    pieces = [PLAN[i : i + 12] for i in range(0, len(PLAN), 12)]
    stack.llm.script(
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [
                    {
                        "reasoning": PLANNER_THINKS,
                        "chunks": pieces,
                        "chunk_delay": 0.15,
                        "delay": 1,  # time to open the page and its socket
                    }
                ],
            },
            {"match": "AGENTDESK:STEP 0", "replies": [{"content": "The notes list two."}]},
            {"match": "AGENTDESK:STEP 1", "replies": [{"content": ANSWER}]},
            {
                "match": "AGENTDESK:VERIFY",
                "replies": [
                    {
                        "content": json.dumps(
                            {
                                "task_complete": True,
                                "reasoning": "The summary names both decisions.",
                                "should_replan": False,
                                "response": ANSWER,
                                "evidence": [],
                            }
                        )
                    }
                ],
            },
        ]
    )
    log_in(page, "owner", PASSWORD)
    page.goto("/tasks/new/")
    page.fill("#task-form textarea[name=task]", "Summarise the meeting's decisions")
    page.click("#task-form button[type=submit]")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    page.evaluate(WATCH_STREAM)
    expect(page.locator("#run-live .live-indicator")).to_have_attribute(
        "data-state", "live", timeout=WAIT_MS
    )

    # While the planner writes, the panel lists the steps it has written so far.
    forming = page.wait_for_function(
        """() => {
            const stream = document.getElementById("stream");
            if (!stream || !stream.textContent.includes("1. Read the meeting notes")) return false;
            const placeholder = document.querySelector("#reasoning .reasoning-empty");
            return {
                text: stream.textContent,
                label: document.getElementById("stream-label").textContent,
                planShown: document.querySelectorAll("#plan .step").length,
                placeholderShown: !!placeholder && placeholder.offsetParent !== null,
                liveReasoning: document.getElementById("reasoning-live").textContent,
            };
        }""",
        polling="raf",
        timeout=WAIT_MS,
    ).json_value()
    assert forming["label"] == "Planning"
    assert forming["planShown"] == 0, "the plan was already made: nothing was seen forming"
    assert '{"' not in forming["text"] and "objective" not in forming["text"]
    assert PLANNER_THINKS in forming["liveReasoning"]
    assert not forming["placeholderShown"], "the placeholder sat above live reasoning"
    expect(page.locator("#stream")).to_contain_text(
        "2. Write the summary of the decisions", timeout=WAIT_MS
    )

    expect(page.locator("#run-status")).to_have_attribute(
        "data-status", "succeeded", timeout=WAIT_MS
    )
    # After the run the panel keeps the final answer, rendered, not its placeholder.
    expect(page.locator("#stream h2")).to_have_text("Summary")
    expect(page.locator("#stream strong")).to_have_text("Friday")
    expect(page.locator("#stream-label")).to_have_text("Final answer")
    expect(page.locator("#result .answer li")).to_have_count(2)
    planning = page.locator("#reasoning-saved .thought").filter(has_text="Planning")
    expect(planning).to_contain_text(PLANNER_THINKS)

    seen = page.evaluate("window.streamTexts")
    assert seen, "the streaming panel never changed"
    assert not [text for text in seen if '{"' in text or '"steps"' in text]

    page.reload()
    expect(page.locator("#stream h2")).to_have_text("Summary")
    expect(page.locator("#reasoning-saved .thought").filter(has_text="Planning")).to_contain_text(
        PLANNER_THINKS
    )
