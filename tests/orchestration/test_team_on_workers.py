"""A team on real Celery worker processes, real Redis and the scripted OpenAI-wire LLM: the
children of one head node run at the same time on different workers, and a worker killed
(SIGKILL) in the middle of a fan-out loses nothing and repeats nothing: every child hands back
exactly one result and the head node aggregates each once. The same team driven by hand in one
process: test_team_engine.py."""

import pytest

from agents_app.models import AgentMessage, Run, RunEvent, RunStatus, Step
from agents_app.tasks import execute_run
from tests.support.script import asked, json_reply
from tests.support.teams import make_head
from tests.support.waiting import wait_for, wait_for_run

pytestmark = pytest.mark.integration

# Children answer directly (one model request each) instead of planning.
DIRECT = {"AGENT_FAST_PATH_MAX_CHARS": "500"}
# Where the two children's requests wait for each other.
MEETING = {"name": "children", "parties": 2, "timeout": 30}


def split(*subtasks: tuple[str, str]) -> dict:
    """The head node's decomposition: parallel subtasks (description, preferred profile)."""
    return {
        "match": "AGENTDESK:TEAM",
        "replies": [
            json_reply(
                {
                    "pattern": "parallel",
                    "subtasks": [
                        {"description": text, "depends_on": [], "preferred_profile": profile}
                        for text, profile in subtasks
                    ],
                    "reasoning": "independent parts",
                }
            )
        ],
    }


def answers(marker: str, *replies: dict) -> dict:
    """A child's direct answers, matched by the marker only its own subtask holds. The last is
    given again to any later request: a child taken over after a kill asks once more, and what
    the test pins is the results handed back, not the requests."""
    return {"match": ["AGENTDESK:DIRECT", marker], "replies": list(replies), "repeat": True}


def children_of(head: Run) -> list[Run]:
    return list(Run.objects.filter(parent=head).order_by("parent_step__index"))


def assert_each_child_handed_back_once(head: Run, markers: list[str]) -> list[Run]:
    head.refresh_from_db()
    assert head.status == RunStatus.SUCCEEDED, (head.error_code, head.error_message)
    children = children_of(head)
    # One child per subtask: nothing was delegated twice.
    assert [c.parent_step.index for c in children] == list(range(len(markers)))
    assert [c.status for c in children] == [RunStatus.SUCCEEDED] * len(markers)
    for child in children:
        results = AgentMessage.objects.filter(sender=child, type="task_result")
        assert results.count() == 1, child.pk
    finished = RunEvent.objects.filter(run=head, type="child_finished")
    assert sorted(e.payload["run_id"] for e in finished) == [c.pk for c in children]
    for marker in markers:
        assert head.final_response.count(f"{marker} done") == 1, head.final_response
    steps = Step.objects.filter(run=head).order_by("index")
    assert [s.status for s in steps] == ["completed"] * len(markers)
    return children


@pytest.mark.slow(reason="two workers start and run a team's children at once")
def test_independent_children_run_at_the_same_time_on_two_workers(
    llm, start_worker, owner, seeded_profiles
):
    markers = ["ALPHA-PART", "BETA-PART"]
    llm.script(
        [
            split(
                ("Research ALPHA-PART of the topic", "research_agent"),
                ("Implement BETA-PART of the tool", "builder_agent"),
            ),
            # Each child's request waits until the other's is in flight too (30 s at most), so
            # a worker that starts late does not fail the test, and one worker doing both
            # children in turn does: its first request is answered before the second comes.
            *(
                answers(marker, {"content": f"{marker} done", "meet": MEETING})
                for marker in markers
            ),
        ]
    )
    start_worker("one", **DIRECT)
    start_worker("two", **DIRECT)
    head = make_head(owner)
    execute_run.delay(head.pk)
    wait_for_run(head.pk, timeout=90)

    first, second = assert_each_child_handed_back_once(head, markers)
    assert {first.profile.name, second.profile.name} == {"research_agent", "builder_agent"}
    # Both children's requests were in flight at once: one after the other, the second would
    # have come after the first was answered. (How long the two take together, against one
    # worker doing both, is a figure: bench/team_parallel.py.)
    windows = [
        (came, answered) for text, came, answered in llm.timeline if "AGENTDESK:DIRECT" in text
    ]
    assert len(windows) == 2 and all(answered for _, answered in windows), windows
    assert max(came for came, _ in windows) < min(answered for _, answered in windows), windows


@pytest.mark.slow(
    reason="two workers start, one after the other, the second once the first is killed mid fan-out"
)
def test_a_worker_killed_mid_fan_out_loses_no_child_and_repeats_no_result(
    llm, start_worker, owner, seeded_profiles
):
    markers = ["ALPHA-PART", "BETA-PART", "GAMMA-PART"]
    llm.script(
        [
            split(
                ("Research ALPHA-PART of the topic", "research_agent"),
                ("Implement BETA-PART of the tool", "builder_agent"),
                ("Review GAMMA-PART of the result", "synthesis_agent"),
            ),
            # ALPHA's first request hangs until its worker is killed; the taken-over one answers.
            answers(
                "ALPHA-PART", {"content": "too late", "delay": 60}, {"content": "ALPHA-PART done"}
            ),
            answers("BETA-PART", {"content": "BETA-PART done", "delay": 1}),
            answers("GAMMA-PART", {"content": "GAMMA-PART done", "delay": 1}),
        ]
    )
    # One worker of one thread first: it runs the head node, which queues ALPHA, BETA and
    # GAMMA in that order, then takes ALPHA (one task at a time, the oldest message first).
    first = start_worker("one", concurrency=1, **DIRECT)
    head = make_head(owner)
    execute_run.delay(head.pk)
    wait_for(lambda: asked(llm, "ALPHA-PART"), timeout=60, message="ALPHA's request")
    assert not asked(llm, "BETA-PART") and not asked(llm, "GAMMA-PART"), [
        text for text, _, _ in llm.timeline if "BETA-PART" in text
    ]
    # A second worker joins (its start queues the children no worker holds once more), and the
    # first is killed in the middle of ALPHA; the second gets the killed worker's
    # unacknowledged message back once that is 4 s old.
    start_worker("two", CELERY_VISIBILITY_TIMEOUT="4", **DIRECT)
    first.kill()
    wait_for_run(head.pk, timeout=120)

    children = assert_each_child_handed_back_once(head, markers)
    alpha = children[0]
    assert alpha.final_response == "ALPHA-PART done"
    # Its one step was taken over where the killed worker left it.
    (step,) = Step.objects.filter(run=alpha)
    assert (step.status, step.retry_count >= 1) == ("completed", True), step.retry_count
    # The head node's aggregate names every child once, in subtask order.
    text = head.final_response
    assert (
        text.index("ALPHA-PART done") < text.index("BETA-PART done") < text.index("GAMMA-PART done")
    )
