"""The new-task form's "Use the team" checkbox."""

import pytest

from agents_app.models import Run, Task
from tests.support.markup import by_id, ids

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_form_offers_the_team_with_a_line_saying_what_it_does(owner_session):
    html = owner_session.get("/tasks/new/").content.decode()

    assert "id_team" in ids(html)
    box = by_id(html, "id_team")
    assert (box["type"], box["name"]) == ("checkbox", "team")
    assert "checked" not in box
    assert "Use the team" in html and "a head node splits the task into subtasks" in html


@pytest.mark.parametrize(("sent", "kept"), [({}, "cancel"), ({"close_policy": "finish"}, "finish")])
def test_the_close_policy_chosen_on_the_form_is_the_runs(
    owner_session, llm_configured, seeded_profiles, sent, kept
):
    html = owner_session.get("/tasks/new/").content.decode()
    assert "If the team stops first, its working agents" in html
    assert 'value="finish"' in html and "let them finish" in html

    response = owner_session.post("/tasks/new/", {"task": "Research", "team": "on", **sent})

    assert response.status_code == 302
    assert Run.objects.get().close_policy == kept


def test_a_close_policy_not_offered_is_shown_on_the_form(owner_session, llm_configured):
    response = owner_session.post("/tasks/new/", {"task": "Research", "close_policy": "wait"})

    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()
    assert not Run.objects.exists()


@pytest.mark.parametrize(
    ("sent", "team", "kind"), [({"team": "on"}, True, "team"), ({}, False, "task")]
)
def test_the_choice_reaches_the_task_and_its_run(
    owner_session, llm_configured, seeded_profiles, sent, team, kind
):
    response = owner_session.post("/tasks/new/", {"task": "Research the parsers", **sent})

    assert response.status_code == 302
    assert Task.objects.get().team is team
    run = Run.objects.get()
    assert run.kind == kind
    assert response["Location"] == f"/runs/{run.pk}/"
