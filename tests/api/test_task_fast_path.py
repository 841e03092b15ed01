"""A task's fast_path option over REST: true, false or null (the setting decides)."""

import pytest

from agents_app.core.errors import DomainError
from agents_app.models import Run, Task
from agents_app.runs.services import task_submit
from tests.support.api import assert_error, submit

pytestmark = pytest.mark.usefixtures("llm_configured")


@pytest.mark.parametrize("value", [True, False, None])
def test_a_task_keeps_its_fast_path_option(owner_api, value):
    response = submit(owner_api, fast_path=value)

    assert response.status_code == 202, response.content
    assert Task.objects.get().fast_path is value
    run_id = response.json()["run_id"]
    assert owner_api.get(f"/api/v1/runs/{run_id}").json()["fast_path"] is value
    listed = owner_api.get("/api/v1/runs").json()["results"]
    assert [r["fast_path"] for r in listed] == [value]


def test_a_task_without_the_option_leaves_it_to_the_setting(owner_api):
    assert submit(owner_api).status_code == 202

    assert Task.objects.get().fast_path is None


@pytest.mark.parametrize("value", ["yes", 1, 0, "true", [], {}])
def test_a_fast_path_that_is_no_boolean_is_refused(owner_api, value):
    error = assert_error(submit(owner_api, fast_path=value), 400, "VALIDATION_ERROR")

    assert error["details"]["errors"][0]["field"] == "fast_path"
    assert not Task.objects.exists() and not Run.objects.exists()


def test_task_submit_refuses_a_fast_path_that_is_no_boolean_from_any_front_end(owner):
    with pytest.raises(DomainError) as refused:
        task_submit(owner=owner, interface="mcp", text="Do it", fast_path=1)

    assert refused.value.code == "VALIDATION_ERROR"
    assert refused.value.details["field"] == "fast_path"
    assert not Task.objects.exists()
