"""A team's run replayed (issue 36, item 4): the head node's recorded answers split the task the
same way, and each child is a replay of its source's matching child, answered from that
child's record; no model is asked anywhere in the tree."""

import pytest

from agents_app.models import Run, Task
from agents_app.runs.services import run_create
from agents_app.worker.execution import execute_run
from tests.support.replays import divergences, no_model, replayed_tree
from tests.support.script import json_reply
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import make_registry

pytestmark = pytest.mark.django_db(transaction=True)


def split(*subtasks: str) -> dict:
    found = [{"description": text, "depends_on": []} for text in subtasks]
    return json_reply({"pattern": "parallel", "subtasks": found, "reasoning": "split"})


def direct(answer: str, marker: str) -> dict:
    return {"match": ["AGENTDESK:DIRECT", marker], "replies": [{"content": answer}]}


RULES = [
    {
        "match": "AGENTDESK:TEAM",
        "replies": [
            split(
                "Research the existing parsers and explore their docs",
                "Implement the parser function in parser.py",
            )
        ],
    },
    direct("Three parsers exist: a, b and c.", "Research the existing"),
    direct("parser.py is written.", "Implement the parser"),
]


def recorded_team(owner) -> Run:
    head = run_create(
        task=Task.objects.create(
            owner=owner, text="Research the topic and implement the tool", team=True
        )
    )
    provider = ScriptedProvider(RULES)
    for _ in range(5):
        for run in Run.objects.filter(root_id=head.pk).order_by("pk"):
            if not run.is_terminal:
                execute_run(run.pk, provider=provider, registry=make_registry())
        execute_run(head.pk, provider=provider, registry=make_registry())
        head.refresh_from_db()
        if head.is_terminal:
            break
    return head


def test_a_team_is_replayed_with_its_children_as_replays_of_the_source_children(
    owner, seeded_profiles, queued_runs, settings, monkeypatch
):
    settings.AGENT_FAST_PATH_MAX_CHARS = 500
    source = recorded_team(owner)
    assert source.status == "succeeded", (source.error_code, source.error_message)
    no_model(monkeypatch)

    replay = replayed_tree(source, registry=make_registry())

    assert replay.status == "succeeded", (replay.error_code, replay.error_message)
    theirs = list(Run.objects.filter(parent=source).order_by("parent_step__index"))
    mine = list(Run.objects.filter(parent=replay).order_by("parent_step__index"))
    expected = source.final_response
    for their, my in zip(theirs, mine, strict=True):
        expected = expected.replace(f"run {their.pk}", f"run {my.pk}")
    assert replay.final_response == expected
    assert [(c.origin, c.origin_run_id) for c in mine] == [("replay", c.pk) for c in theirs]
    assert [c.status for c in mine] == ["succeeded", "succeeded"]
    assert [c.final_response for c in mine] == [c.final_response for c in theirs]
    assert all(divergences(run) == [] for run in (replay, *mine))
