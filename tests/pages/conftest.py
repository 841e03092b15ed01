import pytest
from django.test import Client


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # Autouse, so it applies before the persona fixtures hash their passwords.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def owner_client(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


@pytest.fixture
def outsider_client(outsider) -> Client:
    client = Client()
    client.force_login(outsider)
    return client
