"""POST /api/v1/runs/{id}/replay and the MCP tool replay_run (issue 36, item 4): a replay of one
of your ended, recorded runs; anyone else's run is 404."""

import pytest

from agents_app.models import AuditEvent, Run, RunKind
from tests.support.api import assert_error, post_json
from tests.support.replays import notes_script, recorded, replayed
from tests.support.runs import fail, make_run, to_status
from tests.support.workspaces import own_workspaces
from tools_app.builtin.files import ReadFileTool

pytestmark = pytest.mark.usefixtures("own_workspaces")
__all__ = ["own_workspaces"]


def replay(client, run, body=None):
    return post_json(client, f"/api/v1/runs/{run.pk}/replay", body)


def test_replaying_an_ended_run_queues_a_replay_of_it(owner, owner_api):
    source = fail(make_run(owner, "Read the notes"))

    response = replay(owner_api, source, {"rerun": ["http_get"]})

    assert response.status_code == 201
    body = response.json()
    new = Run.objects.get(pk=body["id"])
    assert (new.task_id, new.kind, new.status) == (source.task_id, "task", "queued")
    assert (new.origin, new.origin_run_id, new.origin_options) == (
        "replay",
        source.pk,
        {"rerun": ["http_get"]},
    )
    assert body["origin"] == {
        "kind": "replay",
        "run_id": source.pk,
        "after_step": None,
        "plan_version": None,
        "divergences": 0,
        "first_divergence": None,
    }
    audit = AuditEvent.objects.get(action="run.replay")
    assert (audit.run_id, audit.actor_id, audit.interface) == (source.pk, owner.pk, "api")
    assert audit.details == {"replay_run_id": new.pk, "rerun": ["http_get"]}
    # Without a body, nothing is run again.
    again = replay(owner_api, source)
    assert again.status_code == 201 and again.json()["origin"]["kind"] == "replay"


def test_another_persons_run_is_not_found(owner, outsider_api):
    theirs = fail(make_run(owner, "secret plans"))

    error = assert_error(replay(outsider_api, theirs), 404, "NOT_FOUND")

    assert error["message"] == f"Run {theirs.pk} not found"
    assert Run.objects.count() == 1


def test_a_run_still_going_is_a_conflict(owner, owner_api):
    run = make_run(owner)
    to_status(run, "planning", "running")

    error = assert_error(replay(owner_api, run), 409, "CONFLICT")

    assert error["details"] == {"status": "running"}
    assert Run.objects.count() == 1


def test_a_run_recorded_before_answers_were_kept_is_a_conflict_that_says_why(owner, owner_api):
    run = fail(make_run(owner))
    Run.objects.filter(pk=run.pk).update(recorded=False)

    error = assert_error(replay(owner_api, run), 409, "CONFLICT")

    assert error["message"] == "Recorded before model answers were kept: cannot be replayed"
    assert Run.objects.count() == 1


def test_a_contract_attempt_is_not_replayed_on_its_own(owner, owner_api):
    run = fail(make_run(owner))
    Run.objects.filter(pk=run.pk).update(kind=RunKind.CONTRACT)

    error = assert_error(replay(owner_api, run), 409, "CONFLICT")

    assert "not replayed on its own" in error["message"]


@pytest.mark.dialect
@pytest.mark.parametrize("rerun", [[""], ["x" * 201], "http_get", ["a\x00b"], ["\ud800"]])
def test_a_bad_rerun_list_is_a_validation_error(owner, owner_api, rerun):
    run = fail(make_run(owner))

    error = assert_error(replay(owner_api, run, {"rerun": rerun}), 400, "VALIDATION_ERROR")

    assert error["trace_id"]
    assert Run.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_the_run_shape_says_where_a_replay_diverged(owner, owner_api, monkeypatch):
    source = recorded(owner, notes_script())
    original = ReadFileTool.run

    def other(self, arguments, context):
        result = original(self, arguments, context)
        result.content = {**result.content, "content": "bye"}
        return result

    monkeypatch.setattr(ReadFileTool, "run", other)
    diverged = replayed(source)

    body = owner_api.get(f"/api/v1/runs/{diverged.pk}").json()

    origin = body["origin"]
    assert (origin["kind"], origin["run_id"], origin["divergences"]) == ("replay", source.pk, 3)
    first = origin["first_divergence"]
    assert (first["kind"], first["step"], first["call"]) == ("result_differs", 2, 1)
    assert first["anchor"] == "step-2-call-1"
    assert owner_api.get(f"/api/v1/runs/{source.pk}").json()["origin"] is None


def test_a_fork_is_not_replayed(owner, owner_api):
    run = fail(make_run(owner))
    Run.objects.filter(pk=run.pk).update(origin="fork")

    error = assert_error(replay(owner_api, run), 409, "CONFLICT")

    assert error["message"].endswith("replay its source instead")
    assert error["details"] == {"origin": "fork"}
    assert Run.objects.count() == 1
    # Its shape says so before anyone asks (the one rule the page's Replay follows too).
    body = owner_api.get(f"/api/v1/runs/{run.pk}").json()
    assert (body["replayable"], body["not_replayable_because"]) == (False, error["message"])
