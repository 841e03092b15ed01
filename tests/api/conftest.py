import pytest
from django.test import Client

from tests.api.support import key_client, make_api_key


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # Autouse, so it applies before the persona fixtures hash their passwords.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def owner_client(owner) -> Client:
    return key_client(make_api_key(owner))


@pytest.fixture
def outsider_client(outsider) -> Client:
    return key_client(make_api_key(outsider))


@pytest.fixture
def anonymous_client(db) -> Client:
    return Client(enforce_csrf_checks=True)
