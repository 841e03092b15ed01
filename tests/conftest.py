import pytest
from django.contrib.auth import get_user_model


@pytest.fixture
def owner(db):
    return get_user_model().objects.create_user("owner", password="owner-pass-123")


@pytest.fixture
def outsider(db):
    return get_user_model().objects.create_user("outsider", password="outsider-pass-123")


@pytest.fixture
def llm_configured(settings):
    settings.LLM_BASE_URL = "http://127.0.0.1:9/v1"
    settings.LLM_MODEL = "scripted"
    return settings


@pytest.fixture(autouse=True)
def plain_static_storage(settings):
    """In-process tests render pages without running collectstatic first."""
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
