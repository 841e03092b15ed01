import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.api.support import key_client, make_api_key


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # Autouse, so it applies before the persona fixtures hash their passwords.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_superuser("staff", "", None)


@pytest.fixture
def staff_client(staff) -> Client:
    client = Client()
    client.force_login(staff)
    return client


@pytest.fixture
def owner_api(owner) -> Client:
    """The owner as a script: a bearer key, CSRF enforced."""
    return key_client(make_api_key(owner))


@pytest.fixture
def owner_browser(owner) -> Client:
    """The owner logged in to the pages."""
    client = Client()
    client.force_login(owner)
    return client
