"""The Files panel shows the workspace as it was after a chosen step, rebuilt from the run's
workspace journal (issue 36, item 2); another person's run is a 404."""

from html import unescape

import pytest

from tests.support.clients import logged_in
from tests.support.journal import run_steps
from tests.support.markup import by_id, elements
from tests.support.script import tool_call
from tests.support.workspaces import own_workspaces

pytestmark = [pytest.mark.usefixtures("own_workspaces"), pytest.mark.django_db(transaction=True)]
__all__ = ["own_workspaces"]

HTMX = {"HX-Request": "true"}


def paths(html: str) -> list[str]:
    return [a["data-path"] for tag, a in elements(html) if tag == "li" and "data-path" in a]


def test_the_panel_shows_the_files_and_a_files_text_as_they_were_after_the_chosen_step(
    owner, outsider
):
    run = run_steps(
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
    client = logged_in(owner)

    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert by_id(page, "files-after-step")["name"] == "after_step"
    assert "the files after step 1" in page and "the files after step 2" in page

    tree = client.get(f"/runs/{run.pk}/files/", {"after_step": 1}, headers=HTMX)
    html = tree.content.decode()
    assert paths(html) == ["report.md", "scratch.txt"]
    assert 'data-after-step="1"' in html and "after_step=1" in html
    assert paths(client.get(f"/runs/{run.pk}/files/", {"after_step": 2}).content.decode()) == [
        "report.md"
    ]

    view = f"/runs/{run.pk}/files/view/"
    first = client.get(view, {"path": "report.md", "after_step": 1}, headers=HTMX).content.decode()
    assert "draft" in unescape(first) and "as it was after step 1" in first
    second = client.get(view, {"path": "report.md", "after_step": 2}, headers=HTMX)
    assert "final version" in second.content.decode()
    gone = client.get(view, {"path": "scratch.txt", "after_step": 2}, headers=HTMX)
    assert 'data-code="NOT_FOUND"' in gone.content.decode()

    stranger = logged_in(outsider)
    assert stranger.get(f"/runs/{run.pk}/files/", {"after_step": 1}).status_code == 404
    assert stranger.get(view, {"path": "report.md", "after_step": 1}).status_code == 404


def test_a_step_the_run_does_not_have_is_said_in_the_panel(owner):
    run = run_steps(owner, [tool_call("disk", path="a.txt", content="a")])

    html = logged_in(owner).get(f"/runs/{run.pk}/files/", {"after_step": 9}, headers=HTMX)
    assert html.status_code == 200
    assert 'data-code="VALIDATION_ERROR"' in html.content.decode()
