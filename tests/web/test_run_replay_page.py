"""The run page's Replay (issue 36, item 4): a button on an ended recorded run, and on a
replay's page where it diverged from its source, with a link to the diff page."""

import pytest
from django.test import Client

from agents_app.models import Run
from tests.support.markup import ids
from tests.support.replays import notes_script, recorded, replayed
from tests.support.runs import fail, make_run
from tests.support.workspaces import own_workspaces
from tools_app.builtin.files import ReadFileTool

pytestmark = pytest.mark.usefixtures("own_workspaces")
__all__ = ["own_workspaces"]


def meta_of(page: str) -> str:
    return page[page.find('id="run-meta"') : page.find("</dl>")]


def test_an_ended_recorded_run_offers_replay_and_it_opens_the_replay(owner, owner_session):
    source = fail(make_run(owner))
    assert "replay-run" in ids(owner_session.get(f"/runs/{source.pk}/").content.decode())

    response = owner_session.post(f"/runs/{source.pk}/replay/", headers={"HX-Request": "true"})

    new = Run.objects.exclude(pk=source.pk).get()
    assert response["HX-Redirect"] == f"/runs/{new.pk}/"
    page = owner_session.get(f"/runs/{new.pk}/").content.decode()
    meta = page[page.find('id="run-meta"') : page.find("</dl>")]
    assert f'of <a href="/runs/{source.pk}/">run {source.pk}</a>: no divergence so far' in meta
    assert f'href="/runs/{source.pk}/diff/{new.pk}/"' in meta


def test_a_run_still_going_not_recorded_or_a_fork_offers_no_replay(owner, owner_session):
    going = make_run(owner)
    unrecorded = fail(make_run(owner))
    Run.objects.filter(pk=unrecorded.pk).update(recorded=False)
    fork = fail(make_run(owner))
    Run.objects.filter(pk=fork.pk).update(origin="fork")

    for run in (going, unrecorded, fork):
        assert "replay-run" not in ids(owner_session.get(f"/runs/{run.pk}/").content.decode())


@pytest.mark.django_db(transaction=True)
def test_a_replays_page_says_where_it_diverged_and_links_the_diff(
    owner, owner_session, monkeypatch
):
    source = recorded(owner, notes_script())
    same = replayed(source)
    original = ReadFileTool.run

    def other(self, arguments, context):
        result = original(self, arguments, context)
        result.content = {**result.content, "content": "bye"}
        return result

    monkeypatch.setattr(ReadFileTool, "run", other)
    diverged = replayed(source)

    clean = owner_session.get(f"/runs/{same.pk}/").content.decode()
    page = owner_session.get(f"/runs/{diverged.pk}/").content.decode()

    assert f"run {source.pk}</a>: no divergence ·" in meta_of(clean)
    shown = meta_of(page)
    assert "diverged at step 2 call 1: step 2: call 1 read_file result differs" in shown
    assert "(3 divergences)" in shown
    assert f'href="/runs/{source.pk}/diff/{diverged.pk}/#step-2-call-1"' in page


def test_another_persons_run_is_not_found_on_the_replay_post(owner, outsider):
    source = fail(make_run(owner, "secret plans"))
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(outsider)
    browser.get("/runs/")
    token = browser.cookies["csrftoken"].value

    response = browser.post(
        f"/runs/{source.pk}/replay/", {"csrfmiddlewaretoken": token}, headers={"HX-Request": "true"}
    )

    assert response.status_code == 404
    assert "secret plans" not in response.content.decode()
    assert Run.objects.count() == 1
    # The same token is good for the outsider's own run: it was the run that was refused.
    theirs = fail(make_run(outsider))
    mine = browser.post(
        f"/runs/{theirs.pk}/replay/", {"csrfmiddlewaretoken": token}, headers={"HX-Request": "true"}
    )
    assert mine.status_code == 200 and mine["HX-Redirect"]
