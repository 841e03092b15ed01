"""Forking from the run page (issue 36, item 3): each completed step of a finished run has a
"Fork after this step" form (CSRF-protected); the fork's page says what it forks and links to
the source and to the diff, which shows the two runs parting at step 4."""

import re

import pytest
from django.test import Client

from agents_app.models import AuditEvent, Run
from tests.support.forks import executed, five_step_run, fork_script, other_connection
from tests.support.markup import by_id
from tests.support.workspaces import own_workspaces

# Nothing is sent to a broker: the tests execute the forks they make themselves.
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("own_workspaces", "queued_runs"),
]
__all__ = ["own_workspaces"]


def test_each_completed_step_of_a_finished_run_offers_a_fork_after_it(owner, owner_session, llm):
    source = five_step_run(owner)
    other_connection(llm)

    html = owner_session.get(f"/runs/{source.pk}/").content.decode()

    assert html.count("<summary>Fork after this step</summary>") == 5
    form = by_id(html, "fork-1-2")
    assert form["action"] == f"/runs/{source.pk}/fork/" and form["method"] == "post"
    step_3 = html.split('id="fork-1-2"')[1].split("</form>")[0]
    assert 'name="after_step" value="3"' in step_3 and 'name="plan_version" value="1"' in step_3
    assert 'name="csrfmiddlewaretoken"' in step_3
    assert 'name="steps"' in step_3 and 'name="instruction"' in step_3
    assert "other (other-model)" in step_3


def test_a_run_still_working_offers_no_fork(owner, owner_session):
    source = five_step_run(owner)
    Run.objects.filter(pk=source.pk).update(status="running")

    html = owner_session.get(f"/runs/{source.pk}/").content.decode()

    assert "Fork after this step" not in html


def test_the_form_forks_and_the_forks_page_links_to_its_source_and_the_diff(
    owner, owner_session, llm
):
    source = five_step_run(owner)
    other = other_connection(llm)
    llm.script(fork_script())

    response = owner_session.post(
        f"/runs/{source.pk}/fork/",
        {
            "after_step": "3",
            "plan_version": "1",
            "steps": "",
            "instruction": "Be brief.",
            "connection": str(other.pk),
        },
    )

    fork = Run.objects.exclude(pk=source.pk).get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{fork.pk}/"
    assert AuditEvent.objects.get(action="run.fork").interface == "web"
    html = owner_session.get(f"/runs/{fork.pk}/").content.decode()
    origin = html.split('id="run-origin"')[1].split("</p>")[0]
    assert "Fork of <a" in origin and f"run #{source.pk}</a> after step 3" in origin
    assert by_id(html, "fork-source-link")["href"] == f"/runs/{source.pk}/"
    diff_url = f"/runs/{source.pk}/diff/{fork.pk}/"
    assert by_id(html, "fork-diff-link")["href"] == f"{diff_url}#first-difference"
    assert "Be brief." in origin
    # Once it ran, the diff page marks step 4 as where they part.
    assert executed(fork).status == "succeeded"
    diff = owner_session.get(diff_url).content.decode()
    assert re.search(r'First difference: <a href="#first-difference">step 4\b', diff)
    assert (
        'id="diff-step-3"' in diff
        and "diverged" not in diff.split('id="diff-step-3"')[1].split('id="diff-step-4"')[0]
    )


def test_a_bad_step_shows_the_error_on_the_run_page(owner, owner_session):
    source = five_step_run(owner)

    response = owner_session.post(f"/runs/{source.pk}/fork/", {"after_step": "9"})

    assert response.status_code == 400
    assert "has 5 steps, no step 9" in response.content.decode()
    assert Run.objects.count() == 1


def test_another_persons_run_is_not_found(owner, outsider_session):
    source = five_step_run(owner)

    response = outsider_session.post(f"/runs/{source.pk}/fork/", {"after_step": "3"})

    assert response.status_code == 404
    assert Run.objects.count() == 1


def test_a_post_without_the_csrf_token_is_refused(owner):
    source = five_step_run(owner)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(owner)

    response = browser.post(f"/runs/{source.pk}/fork/", {"after_step": "3"})

    assert response.status_code == 403
    assert Run.objects.count() == 1


@pytest.mark.dialect
@pytest.mark.parametrize("field", ["connection", "steps", "instruction"])
def test_a_nul_in_a_forms_text_shows_the_error_on_the_run_page(owner, owner_session, field):
    source = five_step_run(owner)

    response = owner_session.post(
        f"/runs/{source.pk}/fork/", {"after_step": "3", "plan_version": "1", field: "a\x00b"}
    )

    assert response.status_code == 400
    assert "must not contain NUL" in response.content.decode()
    assert Run.objects.count() == 1
