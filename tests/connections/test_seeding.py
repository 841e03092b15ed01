"""The LLM_* settings seed the default connection, and changing them changes it."""

from agents_app.connections.services import connection_ensure_default
from agents_app.models import LLMConnection


def test_the_default_connection_is_seeded_from_the_llm_settings(db, settings):
    settings.LLM_BASE_URL = "http://127.0.0.1:11434/v1"
    settings.LLM_MODEL = "qwen2.5:7b"
    settings.LLM_API_KEY = "sk-never-stored-0123456789abcdefghij"

    default = connection_ensure_default()

    assert (default.name, default.base_url, default.model) == (
        "env",
        "http://127.0.0.1:11434/v1",
        "qwen2.5:7b",
    )
    assert default.seeded and default.is_default and default.enabled
    assert default.api_key == "${LLM_API_KEY}"
    stored = LLMConnection.objects.values_list("api_key", flat=True)
    assert all("sk-never-stored" not in value for value in stored)


def test_changing_the_llm_settings_updates_the_seeded_default(db, settings):
    settings.LLM_BASE_URL, settings.LLM_MODEL = "http://127.0.0.1:11434/v1", "qwen2.5:7b"
    connection_ensure_default()

    settings.LLM_BASE_URL, settings.LLM_MODEL = "https://api.example/v1", "big-model"
    connection_ensure_default()

    [seeded] = LLMConnection.objects.all()
    assert (seeded.base_url, seeded.model) == ("https://api.example/v1", "big-model")


def test_without_llm_settings_nothing_is_seeded(db, settings):
    settings.LLM_BASE_URL = ""
    settings.LLM_MODEL = ""

    assert connection_ensure_default() is None
    assert not LLMConnection.objects.exists()


def test_a_staff_default_stays_the_default_when_the_settings_change(db, settings):
    settings.LLM_BASE_URL, settings.LLM_MODEL = "http://127.0.0.1:11434/v1", "small"
    connection_ensure_default()
    LLMConnection.objects.create(
        name="hosted", base_url="https://api.example/v1", model="big", is_default=True
    )

    settings.LLM_MODEL = "smaller"
    default = connection_ensure_default()

    assert default.name == "hosted"
    assert LLMConnection.objects.get(seeded=True).model == "smaller"
    assert LLMConnection.objects.filter(is_default=True).count() == 1
