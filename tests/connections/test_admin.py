"""LLM connections in the admin: the key only ever as a ${VAR} reference, health with Check
now, exactly one default."""

import socket

import pytest

from agents_app.models import ConnectionStatus, LLMConnection

CONNECTIONS = "/admin/agents_app/llmconnection/"
SECRET = "sk-live-AgentDeskTestKey0123456789abcdef"


@pytest.fixture
def key_in_env(monkeypatch):
    monkeypatch.setenv("ADMIN_TEST_LLM_KEY", SECRET)
    return "ADMIN_TEST_LLM_KEY"


def form(**fields):
    return {
        "name": "openrouter",
        "base_url": "https://openrouter.example/api/v1",
        "model": "glm-4.6",
        "api_key": "${ADMIN_TEST_LLM_KEY}",
        "context_window": "131072",
        "enabled": "on",
        **fields,
    }


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_staff_add_a_connection_whose_key_is_a_reference_to_an_environment_variable(
    superuser_admin, key_in_env
):
    response = superuser_admin.post(f"{CONNECTIONS}add/", form())

    assert response.status_code == 302, response.content.decode()[:2000]
    connection = LLMConnection.objects.get(name="openrouter")
    assert connection.api_key == "${ADMIN_TEST_LLM_KEY}"
    assert connection.key_value() == SECRET
    assert (connection.model, connection.context_window) == ("glm-4.6", 131072)
    assert connection.status == ConnectionStatus.UNCHECKED


def test_a_literal_key_typed_into_the_form_is_refused_with_how_to_write_it(superuser_admin):
    response = superuser_admin.post(f"{CONNECTIONS}add/", form(api_key=SECRET))

    html = response.content.decode()
    assert response.status_code == 200
    assert "Write the API key as a reference to an environment variable" in html
    assert "${OPENAI_API_KEY}" in html
    assert not LLMConnection.objects.filter(name="openrouter").exists()


def test_editing_a_connection_keeps_the_key_a_reference(superuser_admin, key_in_env):
    superuser_admin.post(f"{CONNECTIONS}add/", form())
    connection = LLMConnection.objects.get(name="openrouter")

    refused = superuser_admin.post(
        f"{CONNECTIONS}{connection.pk}/change/", form(model="glm-5", api_key="Bearer " + SECRET)
    )
    accepted = superuser_admin.post(
        f"{CONNECTIONS}{connection.pk}/change/", form(model="glm-5", api_key="${OTHER_LLM_KEY}")
    )

    assert refused.status_code == 200 and "reference to an environment variable" in (
        refused.content.decode()
    )
    assert accepted.status_code == 302
    connection.refresh_from_db()
    assert (connection.model, connection.api_key) == ("glm-5", "${OTHER_LLM_KEY}")


def test_the_key_never_appears_in_the_admin_pages(superuser_admin, key_in_env):
    superuser_admin.post(f"{CONNECTIONS}add/", form())
    connection = LLMConnection.objects.get(name="openrouter")

    pages = [
        superuser_admin.get(CONNECTIONS).content.decode(),
        superuser_admin.get(f"{CONNECTIONS}{connection.pk}/change/").content.decode(),
    ]

    assert all(SECRET not in page for page in pages)
    assert "${ADMIN_TEST_LLM_KEY}" in pages[1]


def test_making_a_connection_the_default_takes_it_from_the_one_before(superuser_admin, llm):
    superuser_admin.get(CONNECTIONS)  # seeds the default from LLM_*
    seeded = LLMConnection.objects.get(seeded=True)
    assert seeded.is_default

    superuser_admin.post(f"{CONNECTIONS}add/", form(api_key="", is_default="on"))

    defaults = list(LLMConnection.objects.filter(is_default=True).values_list("name", flat=True))
    assert defaults == ["openrouter"]


def test_check_now_marks_a_reachable_server_ok(superuser_admin, llm):
    connection = LLMConnection.objects.create(
        name="second", base_url=llm.base_url, model="scripted"
    )

    response = superuser_admin.post(
        CONNECTIONS, {"action": "check_now", "_selected_action": [connection.pk]}, follow=True
    )

    connection.refresh_from_db()
    assert connection.status == ConnectionStatus.OK
    assert connection.last_checked_at is not None
    shown = [message.message for message in response.context["messages"]]
    assert shown == ["second: Reachable; model scripted."]


def test_check_now_marks_an_unreachable_server_broken_with_the_reason(superuser_admin):
    port = closed_port()
    connection = LLMConnection.objects.create(
        name="gone", base_url=f"http://127.0.0.1:{port}/v1", model="m"
    )

    superuser_admin.post(CONNECTIONS, {"action": "check_now", "_selected_action": [connection.pk]})

    connection.refresh_from_db()
    assert connection.status == ConnectionStatus.BROKEN
    assert f"cannot reach the LLM server at http://127.0.0.1:{port}/v1" in connection.last_error
    page = superuser_admin.get(CONNECTIONS).content.decode()
    assert "llm-status-broken" in page and "cannot reach the LLM server" in page


def test_a_connection_whose_key_variable_is_unset_checks_broken_naming_it(superuser_admin, llm):
    connection = LLMConnection.objects.create(
        name="nokey", base_url=llm.base_url, model="m", api_key="${SURELY_UNSET_LLM_KEY}"
    )

    superuser_admin.post(CONNECTIONS, {"action": "check_now", "_selected_action": [connection.pk]})

    connection.refresh_from_db()
    assert connection.status == ConnectionStatus.BROKEN
    assert "${SURELY_UNSET_LLM_KEY}" in connection.last_error
