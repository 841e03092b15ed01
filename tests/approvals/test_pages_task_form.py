"""The new-task form's approval options."""

import pytest

from agents_app.models import Task
from tests.support.markup import ids

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_task_form_passes_the_approval_options(owner, owner_session, llm_configured):
    response = owner_session.post(
        "/tasks/new/",
        {
            "task": "Send the note",
            "approve_plan": "on",
            "approval_timeout": "90",
            "approval_on_timeout": "skip",
        },
    )

    assert response.status_code == 302
    task = Task.objects.get()
    assert (task.approve_plan, task.approval_timeout, task.approval_on_timeout) == (
        True,
        90,
        "skip",
    )


def test_the_task_form_offers_the_approval_options(owner_session):
    html = owner_session.get("/tasks/new/").content.decode()

    assert "Show me the plan first" in html
    assert {"id_approve_plan", "id_approval_timeout", "id_approval_on_timeout"} <= set(ids(html))


def test_the_task_form_leaves_the_options_at_their_defaults(owner, owner_session, llm_configured):
    owner_session.post("/tasks/new/", {"task": "Send the note"})

    task = Task.objects.get()
    assert (task.approve_plan, task.approval_timeout, task.approval_on_timeout) == (
        False,
        None,
        "",
    )


def test_a_bad_timeout_is_shown_on_its_field(owner_session, llm_configured):
    response = owner_session.post("/tasks/new/", {"task": "Send", "approval_timeout": "0"})

    assert response.status_code == 400
    assert "id_approval_timeout_error" in ids(response.content.decode())
    assert not Task.objects.exists()
