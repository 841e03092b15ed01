"""POST /api/v1/runs/{id}/fork (issue 36, item 3): a fork of a finished run after one of its
completed steps, 201 with the run's shape and its `origin`; another person's run is 404, a bad
step number or connection 400, a run still working 409, all in the error shape."""

import pytest

from agents_app.models import Run
from tests.support.api import assert_error, post_json
from tests.support.forks import five_step_run
from tests.support.runs import make_run
from tests.support.workspaces import own_workspaces

# Nothing is sent to a broker: the tests execute the forks they make themselves.
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("own_workspaces", "queued_runs"),
]
__all__ = ["own_workspaces"]


def fork_url(run) -> str:
    return f"/api/v1/runs/{run.pk}/fork"


def test_a_fork_answers_201_with_the_new_runs_shape_and_where_it_came_from(owner, owner_api):
    source = five_step_run(owner)

    response = post_json(owner_api, fork_url(source), {"after_step": 3, "instruction": "Be brief."})

    assert response.status_code == 201, response.content[:500]
    body = response.json()
    assert body["origin"] == {
        "kind": "fork",
        "run_id": source.pk,
        "after_step": 3,
        "plan_version": 1,
        # A replay's (issue 36, item 4).
        "divergences": None,
        "first_divergence": None,
    }
    assert (body["task_id"], body["attempt"], body["kind"]) == (source.task_id, 2, "task")
    assert body["status"] == "queued"
    assert Run.objects.get(pk=body["id"]).origin_options == {"instruction": "Be brief."}
    # The source's own shape says it is no fork.
    assert owner_api.get(f"/api/v1/runs/{source.pk}").json()["origin"] is None


def test_another_persons_run_is_not_found(owner, outsider_api):
    source = five_step_run(owner)

    response = post_json(outsider_api, fork_url(source), {"after_step": 3})

    error = assert_error(response, 404, "NOT_FOUND")
    assert error["message"] == f"Run {source.pk} not found"
    assert Run.objects.count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"after_step": 0}, "after_step"),
        ({"after_step": 6}, "after_step"),
        ({"after_step": 3, "plan_version": 7}, "plan_version"),
        ({"after_step": 3, "connection": "nowhere"}, "connection"),
        ({"after_step": 3, "steps": [" "]}, "steps"),
    ],
)
def test_bad_input_is_a_validation_error(owner, owner_api, body, field):
    source = five_step_run(owner)

    error = assert_error(post_json(owner_api, fork_url(source), body), 400, "VALIDATION_ERROR")

    assert error["details"]["field"] == field
    assert Run.objects.count() == 1


@pytest.mark.dialect
@pytest.mark.parametrize("bad", ["no\x00body", "lone \ud800 half"])
@pytest.mark.parametrize("field", ["connection", "steps", "instruction"])
def test_text_no_database_stores_is_a_validation_error_on_every_database(
    owner, owner_api, field, bad
):
    source = five_step_run(owner)
    body = {"after_step": 3, field: [bad] if field == "steps" else bad}

    error = assert_error(post_json(owner_api, fork_url(source), body), 400, "VALIDATION_ERROR")

    assert error["details"]["errors"] and all(
        e["field"].startswith(field) for e in error["details"]["errors"]
    )
    assert "NUL" in error["message"] or "surrogate" in error["message"]
    assert Run.objects.count() == 1


def test_a_step_number_that_is_no_number_is_a_validation_error(owner, owner_api):
    source = five_step_run(owner)

    response = post_json(owner_api, fork_url(source), {"after_step": "three"})

    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert [e["field"] for e in error["details"]["errors"]] == ["after_step"]


def test_a_run_still_working_is_a_conflict(owner, owner_api):
    run = make_run(owner)

    error = assert_error(post_json(owner_api, fork_url(run), {"after_step": 1}), 409, "CONFLICT")

    assert error["details"]["status"] == "queued"
