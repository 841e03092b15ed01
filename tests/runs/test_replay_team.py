"""A team's run replayed (issue 36, item 4): the head node's recorded answers split the task the
same way, and each child is a replay of its source's matching child, answered from that
child's record; no model is asked anywhere in the tree."""

import pytest
from django.core.management import call_command

from agents_app.engine import executor, prompts
from agents_app.models import AuditInterface, Run
from agents_app.runs.replays import run_replay
from agents_app.worker.replaying import execute_replay
from tests.support.replays import divergences, no_model, recorded_team, replayed_tree
from tests.support.tools import make_registry
from tests.support.workspaces import own_workspaces

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["own_workspaces"]


@pytest.mark.dialect
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


@pytest.mark.dialect
@pytest.mark.usefixtures("own_workspaces")
def test_a_child_that_diverged_is_the_replay_s_divergence(
    owner, owner_api, seeded_profiles, queued_runs, settings, monkeypatch, capsys
):
    """A prompt only the children use changed: runs_replay of the head exits 1 naming the
    child's divergence, and the head's origin (REST) counts it."""
    settings.AGENT_FAST_PATH_MAX_CHARS = 500
    source = recorded_team(owner)
    assert source.status == "succeeded", (source.error_code, source.error_message)
    no_model(monkeypatch)
    original = prompts.direct_messages

    def brief(**kw):
        messages = original(**kw)
        messages[0]["content"] += " Be brief."
        return messages

    monkeypatch.setattr(executor, "direct_messages", brief)

    with pytest.raises(SystemExit) as exited:
        call_command("runs_replay", str(source.pk))

    assert exited.value.code == 1
    replay = Run.objects.get(origin_run=source)
    kids = list(Run.objects.filter(parent=replay).order_by("pk"))
    out = capsys.readouterr().out
    assert f"run {kids[0].pk}: " in out and "request_drift" in out, out
    origin = owner_api.get(f"/api/v1/runs/{replay.pk}").json()["origin"]
    assert origin["divergences"] == sum(len(divergences(kid)) for kid in kids) > 0
    assert origin["first_divergence"]["kind"] == "request_drift"
    assert origin["first_divergence"]["message"].startswith(f"run {kids[0].pk}: ")


def test_a_team_s_children_run_again_the_tools_its_replay_was_asked_to(
    owner, seeded_profiles, queued_runs, settings, monkeypatch
):
    settings.AGENT_FAST_PATH_MAX_CHARS = 500
    source = recorded_team(owner)
    no_model(monkeypatch)
    replay = run_replay(
        run=source, actor=owner, interface=AuditInterface.API, rerun=["http_get"], admit=False
    )

    replay = execute_replay(replay.pk, registry=make_registry())

    assert replay.status == "succeeded", (replay.error_code, replay.error_message)
    kids = Run.objects.filter(parent=replay)
    assert [kid.origin_options for kid in kids] == [{"rerun": ["http_get"]}] * 2
