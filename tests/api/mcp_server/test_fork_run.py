"""The fork_run tool (issue 36, item 3): the service POST /api/v1/runs/{id}/fork uses, as the
key's user; another person's run is NOT_FOUND, a bad step number VALIDATION_ERROR, a run still
working CONFLICT, each in the error shape."""

import json

import pytest

from agents_app.models import Run, RunStatus
from tests.support.forks import five_step_run
from tests.support.runs import make_run
from tests.support.workspaces import own_workspaces

# The source's files in this test's own directory (the server rebuilds none: each call is
# refused before it would).
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("own_workspaces")]
__all__ = ["own_workspaces"]


def error_of(result) -> dict:
    assert result.is_error, result
    body = json.loads(result.content[0].text)
    assert body["success"] is False
    assert {"code", "message", "details", "trace_id"} <= set(body["error"])
    return body["error"]


def test_another_persons_run_is_not_found(owner_mcp, outsider):
    theirs = make_run(outsider, "secret plans")
    Run.objects.filter(pk=theirs.pk).update(status=RunStatus.SUCCEEDED)

    result = owner_mcp.call("fork_run", {"run_id": theirs.pk, "after_step": 1})

    error = error_of(result)
    assert (error["code"], error["http_status"]) == ("NOT_FOUND", 404)
    assert "secret plans" not in result.content[0].text
    assert Run.objects.count() == 1


def test_a_step_past_the_last_is_a_validation_error(owner_mcp, owner):
    source = five_step_run(owner)

    error = error_of(owner_mcp.call("fork_run", {"run_id": source.pk, "after_step": 9}))

    assert (error["code"], error["http_status"]) == ("VALIDATION_ERROR", 400)
    assert error["details"]["field"] == "after_step"
    assert Run.objects.count() == 1


def test_a_run_still_working_is_a_conflict(owner_mcp, owner):
    run = make_run(owner)

    error = error_of(owner_mcp.call("fork_run", {"run_id": run.pk, "after_step": 1}))

    assert (error["code"], error["http_status"]) == ("CONFLICT", 409)
