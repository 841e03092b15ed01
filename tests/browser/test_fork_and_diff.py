"""Fork and diff in a real browser (issue 36): a five-step run finishes on a worker, the person
forks it after step 3 from that step's menu with an extra instruction, the fork runs steps 4
and 5 only, and its page links to the diff page, which shows both runs parting at step 4."""

import re

import pytest

from agents_app.models import Run, RunStatus
from tests.support.browser import PASSWORD, WAIT_MS, expect, log_in
from tests.support.script import plan_reply, step, tool_call, verdict
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

REPORT = "report.md"
STEPS = [
    ("Collect the sales figures", "figures: north 120, south 95, west 130"),
    ("Compute the totals", "total 345"),
    ("Draft the report", "# Q3 sales\n\nTotal: 345.\n"),
    ("Add the regional breakdown", "# Q3 sales\n\nTotal: 345.\n\nNorth 120, south 95, west 130.\n"),
    ("Add a one-line summary", "West led the quarter."),
]
# What the fork writes in step 4, after the person asked for a table.
TABLE = "# Q3 sales\n\nTotal: 345.\n\n| Region | Sales |\n|---|---|\n| North | 120 |\n"


def step_rule(index: int, path: str, content: str) -> dict:
    return {
        "match": f"AGENTDESK:STEP {index}\n",
        "replies": [
            tool_call("write_file", path=path, content=content),
            {"content": f"{STEPS[index][0]}: done."},
        ],
    }


def source_script() -> list[dict]:
    paths = ["figures.txt", "totals.txt", REPORT, REPORT, "summary.txt"]
    return [
        {
            "match": "AGENTDESK:PLAN",
            "replies": [plan_reply(*(step(text, ["write_file"]) for text, _ in STEPS))],
        },
        *(step_rule(i, paths[i], content) for i, (_, content) in enumerate(STEPS)),
        {
            "match": "AGENTDESK:VERIFY",
            "replies": [verdict(True, "The report is written.", evidence=[3])],
        },
    ]


def fork_script() -> list[dict]:
    return [
        step_rule(3, REPORT, TABLE),
        step_rule(4, "summary.txt", "West led the quarter; south trails."),
        {
            "match": "AGENTDESK:VERIFY",
            "replies": [verdict(True, "The report has its table.", evidence=[4])],
        },
    ]


def test_a_run_forked_after_step_3_from_its_page_diverges_from_it_at_step_4(
    page, stack, owner, screenshot
):
    stack.llm.script(source_script())
    log_in(page, "owner", PASSWORD)
    page.goto("/tasks/new/")
    page.fill("#task-form textarea[name=task]", "Write the Q3 sales report to report.md")
    page.click("#task-form button[type=submit]")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    source_id = int(re.search(r"/runs/(\d+)/$", page.url).group(1))
    expect(page.locator("#run-status")).to_have_attribute(
        "data-status", "succeeded", timeout=WAIT_MS
    )

    # Step 3's menu: fork after it, with an instruction for the steps that follow.
    page.reload()
    stack.llm.script(fork_script())
    before = len(stack.llm.requests)
    menu = page.locator("#step-1-2 .fork-menu")
    menu.locator("summary").click()
    menu.locator("input[name=instruction]").fill("Give the regional breakdown as a table.")
    menu.locator("button[type=submit]").click()
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    fork_id = int(re.search(r"/runs/(\d+)/$", page.url).group(1))
    assert fork_id != source_id
    expect(page.locator("#run-origin")).to_contain_text(f"Fork of run #{source_id} after step 3")
    expect(page.locator("#run-status")).to_have_attribute(
        "data-status", "succeeded", timeout=WAIT_MS
    )
    forked = wait_for(
        lambda: Run.objects.filter(pk=fork_id, status=RunStatus.SUCCEEDED).first(),
        message="the fork to succeed",
    )
    assert forked.origin_run_id == source_id and forked.origin_step == 3
    # Only steps 4 and 5 (a call, then their answer) and the verdict were asked of the model
    # for the fork (the plan's steps are numbered from 0 in its markers).
    asked = [body["messages"][0]["content"].split("\n")[0] for body in stack.llm.requests]
    assert asked[before:] == ["AGENTDESK:STEP 3"] * 2 + ["AGENTDESK:STEP 4"] * 2 + [
        "AGENTDESK:VERIFY"
    ]

    page.click("#fork-diff-link")
    page.wait_for_url(re.compile(rf"/runs/{source_id}/diff/{fork_id}/"))
    expect(page.locator("#first-difference-line")).to_contain_text("step 4")
    diverged = page.locator(".diff-step.diverged, .diff-call.diverged").first
    expect(diverged).to_be_visible()
    assert (diverged.get_attribute("id") or "").startswith("diff-step-4")
    # Steps 1 to 3 are the same on both sides; step 4 differs.
    for number in (1, 2, 3):
        expect(page.locator(f"#diff-step-{number}")).not_to_have_class(re.compile(r"differs"))
    expect(page.locator("#diff-step-4")).to_have_class(re.compile(r"differs"))
    expect(page.locator(".diff-side[data-side=b] .run-origin")).to_have_text(
        f"fork of #{source_id} after step 3"
    )
    # The picture: from the top down to step 4, where the runs part.
    page.set_viewport_size({"width": 1280, "height": 1400})
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "run-diff.png")
