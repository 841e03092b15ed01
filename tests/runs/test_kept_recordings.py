"""The recorded runs the suite keeps (tests/support/recorded.py) replay with no model request
and no divergence: a prompt, a tool description or a tool that changed since they were
recorded fails here, where `runs_replay` says what drifted. Re-record with REPLAY_RECORD=1 when
the change is meant."""

import os

import pytest
from django.core.management import call_command

from tests.support.recorded import keep, load
from tests.support.replays import no_model, notes_script, recorded, replan_script
from tests.support.workspaces import own_workspaces

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("own_workspaces")]
__all__ = ["own_workspaces"]

SCRIPTS = {"notes": notes_script, "replan": replan_script}


# Recorded on SQLite, and replayed there only: the verifier is shown each call's arguments and
# result as the database gives them back, and PostgreSQL's jsonb reorders their keys (a run
# recorded and replayed on PostgreSQL agrees with itself: tests/runs/test_replay.py).
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_a_kept_recording_replays_without_a_model_or_a_divergence(owner, monkeypatch, capsys, name):
    if os.environ.get("REPLAY_RECORD"):
        source = recorded(owner, SCRIPTS[name]())
        assert source.status == "succeeded", source.error_message
        keep(source, name)
        pytest.skip(f"recorded tests/runs/recorded/{name}.json again")
    source = load(name, owner)
    no_model(monkeypatch)

    call_command("runs_replay", str(source.pk))  # SystemExit(1) on a divergence

    (said,) = capsys.readouterr().out.splitlines()
    assert said.startswith(f"run {source.pk}: replay ")
    assert said.endswith(" succeeded: no divergence")
