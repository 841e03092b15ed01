"""The new-task form offers the enabled LLM connections, the default preselected."""

import re

from agents_app.models import LLMConnection, Run


def options(html: str) -> list[tuple[str, bool]]:
    select = re.search(r'<select name="connection"[^>]*>(.*?)</select>', html, re.S).group(1)
    return [
        (label.strip(), "selected" in attrs)
        for attrs, label in re.findall(r"<option([^>]*)>([^<]*)</option>", select)
    ]


def test_the_form_offers_enabled_connections_with_the_default_preselected(
    owner_session, llm_configured
):
    LLMConnection.objects.create(name="hosted", base_url="https://api.example/v1", model="big")
    LLMConnection.objects.create(
        name="off", base_url="https://x.example/v1", model="m", enabled=False
    )

    html = owner_session.get("/tasks/new/").content.decode()

    assert options(html) == [("env (scripted)", True), ("hosted (big)", False)]


def test_a_task_started_from_the_form_runs_on_the_connection_picked(owner_session, llm_configured):
    hosted = LLMConnection.objects.create(
        name="hosted", base_url="https://api.example/v1", model="big"
    )

    response = owner_session.post(
        "/tasks/new/", {"task": "Plan my week", "connection": str(hosted.pk)}
    )

    assert response.status_code == 302
    run = Run.objects.get()
    assert (run.connection, run.llm_model) == (hosted, "big")


def test_a_connection_disabled_since_the_form_was_drawn_is_a_form_error(
    owner_session, llm_configured
):
    hosted = LLMConnection.objects.create(
        name="hosted", base_url="https://api.example/v1", model="big", enabled=False
    )

    response = owner_session.post(
        "/tasks/new/", {"task": "Plan my week", "connection": str(hosted.pk)}
    )

    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()
    assert not Run.objects.exists()
