"""GET /api/v1/runs/{a}/diff/{b} (issue 36, item 5): two of your runs compared, with the first
point where they part; another person's run is 404 in the error shape."""

import pytest

from tests.support.api import assert_error
from tests.support.diffs import attempt, echo_script
from tests.support.runs import make_run
from tests.support.workspaces import own_workspaces

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("own_workspaces")]
__all__ = ["own_workspaces"]


def test_two_attempts_are_compared_with_their_first_divergence(owner, owner_api):
    first = attempt(echo_script("two"), owner=owner)
    second = attempt(echo_script("TWO"), of=first)

    response = owner_api.get(f"/api/v1/runs/{first.pk}/diff/{second.pk}")

    assert response.status_code == 200, response.content[:500]
    body = response.json()
    assert body["first_divergence"]["reason"] == "step 2: call 1 echo arguments differ"
    assert (body["first_divergence"]["step"], body["first_divergence"]["call"]) == (2, 1)
    assert (body["a"]["id"], body["b"]["id"]) == (first.pk, second.pk)
    assert body["a"]["plan_version"] == 1 and body["a"]["files_from"] in {"journal", "workspace"}
    assert [row["step"] for row in body["steps"]] == [1, 2, 3]
    assert body["steps"][1]["calls"][0]["b"]["arguments"] == '{"text":"TWO"}'
    assert set(body["tokens"]) == {"a", "b", "difference"}
    assert body["outcome"]["a"]["status"] == body["outcome"]["b"]["status"] == "succeeded"


def test_a_run_compared_with_itself_has_no_divergence(owner, owner_api):
    run = attempt(echo_script(), owner=owner)

    body = owner_api.get(f"/api/v1/runs/{run.pk}/diff/{run.pk}").json()

    assert body["first_divergence"] is None and body["divergences"] == 0


def test_another_persons_run_is_not_found(owner, outsider, owner_api):
    mine = make_run(owner)
    theirs = make_run(outsider, "secret plans")

    for a, b in ((mine, theirs), (theirs, mine)):
        response = owner_api.get(f"/api/v1/runs/{a.pk}/diff/{b.pk}")
        error = assert_error(response, 404, "NOT_FOUND")
        assert error["message"] == f"Run {theirs.pk} not found"
        assert b"secret plans" not in response.content
