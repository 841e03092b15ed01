"""The new-task form's "Plan first" select: by setting, direct (one step) or always plan."""

import pytest

from agents_app.models import Task
from tests.support.markup import by_id, ids

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_form_offers_the_three_choices(owner_session):
    html = owner_session.get("/tasks/new/").content.decode()

    assert "id_fast_path" in ids(html)
    assert by_id(html, "id_fast_path")["name"] == "fast_path"
    assert "Plan first" in html
    for label in ("by setting", "direct (one step)", "always plan"):
        assert label in html


@pytest.mark.parametrize(("choice", "stored"), [("", None), ("direct", True), ("plan", False)])
def test_the_choice_reaches_the_task(owner_session, llm_configured, choice, stored):
    response = owner_session.post("/tasks/new/", {"task": "List the files", "fast_path": choice})

    assert response.status_code == 302
    assert Task.objects.get().fast_path is stored


def test_a_choice_the_form_does_not_offer_is_shown_on_its_field(owner_session, llm_configured):
    response = owner_session.post("/tasks/new/", {"task": "List", "fast_path": "maybe"})

    assert response.status_code == 400
    assert "id_fast_path_error" in ids(response.content.decode())
    assert not Task.objects.exists()
