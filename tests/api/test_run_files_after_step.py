"""GET /api/v1/runs/{id}/files?after_step=N: a run's files as they were after one of its steps,
rebuilt from its workspace journal (issue 36, item 2); the owner's runs only."""

import pytest

from tests.support.api import assert_error
from tests.support.journal import run_steps
from tests.support.script import tool_call
from tests.support.workspaces import own_workspaces

pytestmark = [pytest.mark.usefixtures("own_workspaces"), pytest.mark.django_db(transaction=True)]
__all__ = ["own_workspaces"]


def two_steps(owner):
    return run_steps(
        owner,
        [
            tool_call("write_file", path="report.md", content="draft"),
            tool_call("disk", path="scratch.txt", content="tmp"),
        ],
        [
            tool_call("disk", path="report.md", content="final version"),
            tool_call("disk", path="scratch.txt", delete=True),
        ],
    )


def test_the_listing_and_a_download_show_the_files_as_they_were_after_each_step(
    owner, owner_api, outsider_api
):
    run = two_steps(owner)
    url = f"/api/v1/runs/{run.pk}/files"

    first = owner_api.get(url, {"after_step": 1}).json()
    assert [(f["path"], f["size"]) for f in first["files"]] == [
        ("report.md", 5),
        ("scratch.txt", 3),
    ]
    assert first["after_step"] == 1 and first["complete"] is True
    assert first["files"][0]["download"] == f"{url}/report.md?after_step=1"
    second = owner_api.get(url, {"after_step": 2}).json()
    assert [(f["path"], f["size"]) for f in second["files"]] == [("report.md", 13)]
    now = owner_api.get(url).json()
    assert now["after_step"] is None and [f["path"] for f in now["files"]] == ["report.md"]

    assert b"".join(owner_api.get(first["files"][0]["download"]).streaming_content) == b"draft"
    got = owner_api.get(f"{url}/report.md", {"after_step": 2})
    assert b"".join(got.streaming_content) == b"final version"
    assert_error(owner_api.get(f"{url}/scratch.txt", {"after_step": 2}), 404, "NOT_FOUND")

    # Another person's run is not there, whatever the step.
    assert_error(outsider_api.get(url, {"after_step": 1}), 404, "NOT_FOUND")
    assert_error(outsider_api.get(f"{url}/report.md", {"after_step": 1}), 404, "NOT_FOUND")


def test_a_step_that_is_not_one_of_the_runs_answers_400(owner, owner_api):
    run = two_steps(owner)
    url = f"/api/v1/runs/{run.pk}/files"

    for bad in ("3", "0", "first"):
        error = assert_error(owner_api.get(url, {"after_step": bad}), 400, "VALIDATION_ERROR")
        assert error["details"]["field"] == "after_step"
