import pytest
from django.contrib.auth import get_user_model

from agents_app.models import ApiKey


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


@pytest.fixture
def api_key_for():
    def make(user) -> bytes:
        """A new API key of `user`, as an Authorization header value."""
        raw = ApiKey.generate()
        key = ApiKey(user=user, name="ws")
        key.set_key(raw)
        key.save()
        return f"Bearer {raw}".encode()

    return make
