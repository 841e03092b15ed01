"""A team in Chromium against daphne, a real worker and the scripted LLM: a task submitted
with "Use the team" becomes a head node whose three subtasks the selection matrix gives to
research_agent, builder_agent and synthesis_agent; the run page's Team panel shows the tree
and the messages timeline as the children start, work and finish, without a reload; then the
metrics page counts each profile's run.

Each child's answer waits for the test to release it (a gate in the scripted LLM, which runs
in this process), so every state the page must show lasts until the page has shown it."""

import re
import threading

import pytest

from agents_app.models import AgentMessage, Run, RunStatus
from tests.support.browser import PASSWORD, WAIT_MS, expect, log_in
from tests.support.script import json_reply
from tests.support.waiting import wait_for_run

pytestmark = pytest.mark.integration

# Each child is one direct step (the fast path), whose request holds AGENTDESK:DIRECT.
STACK_ENV = {"AGENT_FAST_PATH_MAX_CHARS": "500"}
TASK = "Give us a CSV reader we can trust"
# subtask → (the profile the selection matrix gives it, the child's answer)
SUBTASKS = {
    "Research the existing CSV libraries": (
        "research_agent",
        "Three libraries exist; the standard csv module covers quoting and dialects.",
    ),
    "Implement the reader in reader.py": (
        "builder_agent",
        "reader.py wraps csv.DictReader and reports the line of each bad row.",
    ),
    "Review the reader for edge cases": (
        "synthesis_agent",
        "Reviewed: empty files and a missing header are handled; no issue left.",
    ),
}


def gated(answer: str, gate: threading.Event):
    """A reply given once the test sets `gate` (the child stays running until then)."""

    def reply(body: dict) -> dict:
        gate.wait(WAIT_MS / 1000 * 4)
        return {"content": answer}

    return reply


def node(page, run_id: int):
    return page.locator(f"#team-run-{run_id}")


def statuses(page) -> dict[str, str]:
    """The status each node of the tree shows, by its subtask text."""
    return page.evaluate(
        """() => Object.fromEntries(Array.from(document.querySelectorAll("#team-tree .team-node"))
            .map(n => [n.querySelector(".team-subtask").textContent.trim(), n.dataset.status]))"""
    )


@pytest.mark.slow(
    reason="a team of children runs on a stack of its own (STACK_ENV), the page follows every child to its end"
)
def test_a_team_run_shows_its_tree_and_timeline_live_as_its_children_finish(
    page, stack, owner, seeded_profiles, screenshot
):
    gates = {subtask: threading.Event() for subtask in SUBTASKS}
    split = {
        "pattern": "parallel",
        "subtasks": [
            {"description": s, "depends_on": [], "preferred_profile": ""} for s in SUBTASKS
        ],
    }
    stack.llm.script(
        [
            {"match": "AGENTDESK:TEAM", "replies": [json_reply(split)]},
            *[
                {
                    "match": ["AGENTDESK:DIRECT", subtask],
                    "replies": [gated(answer, gates[subtask])],
                    "repeat": True,
                }
                for subtask, (_, answer) in SUBTASKS.items()
            ],
        ]
    )
    try:
        log_in(page, "owner", PASSWORD)
        page.goto("/tasks/new/")
        page.fill("#task-form textarea[name=task]", TASK)
        page.check("#id_team")
        page.click("#task-form button[type=submit]")
        page.wait_for_url(re.compile(r"/runs/\d+/$"))
        head_id = int(re.search(r"/runs/(\d+)/$", page.url).group(1))
        page.evaluate("window.loadedOnce = 'yes'")  # gone if the page were loaded again
        head = Run.objects.get(pk=head_id)
        assert (head.kind, head.task.team) == ("team", True)

        # The head node splits the task: its children appear in the tree, each assigned.
        expect(page.locator("#team-tree .team-node")).to_have_count(4, timeout=WAIT_MS)
        expect(page.locator("#team-messages [data-type=task_assignment]")).to_have_count(
            3, timeout=WAIT_MS
        )
        children = {c.task.text: c for c in Run.objects.filter(parent=head).select_related("task")}
        assert {s: c.profile.name for s, c in children.items()} == {
            s: profile for s, (profile, _) in SUBTASKS.items()
        }
        for subtask, (profile, _) in SUBTASKS.items():
            expect(node(page, children[subtask].pk).locator(".team-who")).to_have_text(
                profile, timeout=WAIT_MS
            )

        # The worker runs the three children at once (each held by its gate); they end one
        # by one as their gates open, the others still running meanwhile.
        expect(page.locator("#team-tree .team-node[data-status=running]")).to_have_count(
            3, timeout=WAIT_MS
        )
        for done, subtask in enumerate(SUBTASKS):
            expect(page.locator("#team-tree .team-node[data-status=running]")).to_have_count(
                3 - done, timeout=WAIT_MS
            )
            seen = statuses(page)
            assert seen.pop(TASK) == RunStatus.WAITING_CHILDREN, seen
            assert sorted(seen.values()) == sorted(
                ["succeeded"] * done + ["running"] * (3 - done)
            ), seen
            assert seen[subtask] == "running", seen
            expect(page.locator("#team-messages [data-type=task_result]")).to_have_count(
                done, timeout=WAIT_MS
            )

            gates[subtask].set()

            expect(node(page, children[subtask].pk)).to_have_attribute(
                "data-status", "succeeded", timeout=WAIT_MS
            )
            expect(page.locator("#team-messages [data-type=task_result]")).to_have_count(
                done + 1, timeout=WAIT_MS
            )
            result = page.locator("#team-messages [data-type=task_result]").last
            expect(result.locator(".team-route")).to_have_text(
                f"{SUBTASKS[subtask][0]} → head_node (head)", timeout=WAIT_MS
            )
            expect(result.locator(".team-summary")).to_contain_text(
                SUBTASKS[subtask][1][:40], timeout=WAIT_MS
            )

        expect(page.locator("#run-status")).to_have_attribute(
            "data-status", "succeeded", timeout=WAIT_MS
        )
        expect(node(page, head_id)).to_have_attribute("data-status", "succeeded", timeout=WAIT_MS)
        assert page.evaluate("window.loadedOnce") == "yes"
        head = wait_for_run(head_id, timeout=30)
        assert head.status == RunStatus.SUCCEEDED, (head.error_code, head.error_message)
        # The timeline's correlation ids: each result shares its assignment's.
        messages = list(AgentMessage.objects.filter(root=head).order_by("pk"))
        by_correlation = {m.correlation_id: m.type for m in messages if m.type == "task_result"}
        assert all(
            m.correlation_id in by_correlation for m in messages if m.type == "task_assignment"
        )
        short = str(messages[-1].correlation_id)[:8]
        expect(page.locator(f"#team-message-{messages[-1].pk} .team-correlation")).to_have_text(
            short, timeout=WAIT_MS
        )

        page.evaluate("window.scrollTo(0, 0)")
        screenshot(page, "team.png")

        # A child's page: the same tree, itself marked, links up to its head node.
        research = children["Research the existing CSV libraries"]
        page.click(f"#team-run-{research.pk} .team-link")
        page.wait_for_url(f"**/runs/{research.pk}/")
        expect(node(page, research.pk)).to_have_attribute("aria-current", "page", timeout=WAIT_MS)
        expect(page.locator(".team-lineage .team-root-link")).to_have_attribute(
            "href", f"/runs/{head_id}/", timeout=WAIT_MS
        )

        # The metrics page counts each profile's run.
        page.goto("/agent-metrics/")
        for profile, _ in SUBTASKS.values():
            row = page.locator(f"#metrics-{seeded_profiles[profile].pk}")
            expect(row.locator(".profile-name")).to_contain_text(profile, timeout=WAIT_MS)
            expect(row.locator("td[data-label=Succeeded]")).to_have_text("1", timeout=WAIT_MS)
    finally:
        for gate in gates.values():
            gate.set()  # a child still waiting finishes, so the worker goes idle
