"""Cancel and Restart from the run page: POST with CSRF, owner only, CONFLICT shown."""

import pytest
from django.test import Client

from agents_app.models import Run, RunStatus
from tests.support.markup import by_id, ids
from tests.support.runs import add_plan, fail, make_run, to_status


def test_cancelling_a_queued_run_ends_it_and_returns_to_its_page(owner, owner_session):
    run = make_run(owner)

    response = owner_session.post(f"/runs/{run.pk}/cancel/")

    assert response.status_code == 302
    assert response["Location"] == f"/runs/{run.pk}/"
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED


def test_cancelling_a_running_run_asks_it_to_stop(owner, owner_session):
    owner_client = owner_session
    run = make_run(owner)
    add_plan(run, ["Work"])

    owner_client.post(f"/runs/{run.pk}/cancel/")

    run.refresh_from_db()
    assert run.cancel_requested and run.status == RunStatus.RUNNING
    assert "Cancelling…" in owner_client.get(f"/runs/{run.pk}/").content.decode()


def test_an_htmx_cancel_answers_with_the_controls_and_the_status(owner, owner_session):
    run = make_run(owner)

    response = owner_session.post(f"/runs/{run.pk}/cancel/", headers={"HX-Request": "true"})

    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="run-controls"')
    assert 'id="restart-run"' in html
    assert by_id(html, "run-status")["hx-swap-oob"] == "true"
    assert by_id(html, "run-status")["data-status"] == "cancelled"


def test_cancelling_a_finished_run_shows_the_conflict(owner, owner_session):
    run = fail(make_run(owner))

    response = owner_session.post(f"/runs/{run.pk}/cancel/")

    assert response.status_code == 409
    assert f"Run {run.pk} already finished (failed)" in response.content.decode()


def test_restarting_a_finished_run_makes_attempt_2_and_opens_it(owner, owner_session):
    first = fail(make_run(owner, "Try again"))

    response = owner_session.post(f"/runs/{first.pk}/restart/")

    second = Run.objects.exclude(pk=first.pk).get()
    assert response.status_code == 302
    assert response["Location"] == f"/runs/{second.pk}/"
    assert (second.task_id, second.attempt, second.status) == (first.task_id, 2, "queued")


def test_the_pages_of_a_restarted_task_link_its_attempts(owner, owner_session):
    first = fail(make_run(owner))
    owner_session.post(f"/runs/{first.pk}/restart/")
    second = Run.objects.exclude(pk=first.pk).get()

    second_page = owner_session.get(f"/runs/{second.pk}/").content.decode()
    first_page = owner_session.get(f"/runs/{first.pk}/").content.decode()

    assert "attempts" in ids(second_page)
    assert f'href="/runs/{first.pk}/"' in second_page
    assert f'href="/runs/{second.pk}/"' in first_page
    assert f"Run #{second.pk} · attempt 2" in second_page


def test_an_htmx_restart_sends_the_browser_to_the_new_run(owner, owner_session):
    first = fail(make_run(owner))

    response = owner_session.post(f"/runs/{first.pk}/restart/", headers={"HX-Request": "true"})

    second = Run.objects.exclude(pk=first.pk).get()
    assert response["HX-Redirect"] == f"/runs/{second.pk}/"


def test_restarting_a_running_run_shows_the_conflict(owner, owner_session):
    run = make_run(owner)
    to_status(run, RunStatus.PLANNING, RunStatus.RUNNING)

    response = owner_session.post(f"/runs/{run.pk}/restart/")

    html = response.content.decode()
    assert response.status_code == 409
    assert f"Run {run.pk} is still running; cancel it before restarting" in html
    assert 'data-code="CONFLICT"' in html
    assert Run.objects.count() == 1


def test_an_htmx_restart_of_a_running_run_shows_the_conflict_in_the_controls(owner, owner_session):
    run = make_run(owner)

    response = owner_session.post(f"/runs/{run.pk}/restart/", headers={"HX-Request": "true"})

    html = response.content.decode()
    assert response.status_code == 409
    assert html.lstrip().startswith('<div id="run-controls"')
    assert "is still queued" in html


@pytest.mark.parametrize("action", ["cancel", "restart", "replay"])
def test_an_action_needs_a_post(owner, owner_session, action):
    owner_client = owner_session
    run = make_run(owner)

    assert owner_client.get(f"/runs/{run.pk}/{action}/").status_code == 405


@pytest.mark.parametrize("action", ["cancel", "restart", "replay"])
def test_an_action_needs_the_csrf_token(owner, action):
    run = make_run(owner) if action == "cancel" else fail(make_run(owner))
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)

    refused = client.post(f"/runs/{run.pk}/{action}/")
    client.get(f"/runs/{run.pk}/")
    token = client.cookies["csrftoken"].value
    accepted = client.post(f"/runs/{run.pk}/{action}/", headers={"X-CSRFToken": token})

    assert refused.status_code == 403
    assert accepted.status_code == 302


@pytest.mark.parametrize("action", ["cancel", "restart", "replay"])
def test_another_users_run_cannot_be_acted_on(owner, outsider_session, action):
    run = make_run(owner) if action == "cancel" else fail(make_run(owner))

    response = outsider_session.post(f"/runs/{run.pk}/{action}/")

    assert response.status_code == 404
    assert Run.objects.count() == 1
    run.refresh_from_db()
    assert not run.cancel_requested
