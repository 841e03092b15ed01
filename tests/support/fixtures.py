"""Fixtures more than one test folder uses. Import the ones you need into a conftest.py or a test
module (pytest registers a fixture imported into either's namespace), with `# noqa: F401`. Each
function is named apart from its fixture, so a test's argument does not shadow the import."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.support.api import key_client, make_api_key


def client_for(user) -> Client:
    """A client logged in as `user`, as a browser is after signing in."""
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Autouse where imported, so it applies before the persona fixtures hash their passwords.
    Not global: browser tests log in through a server process whose settings lack this hasher."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(name="staff")
def superuser_staff(db):
    """A superuser, for the admin."""
    return get_user_model().objects.create_superuser("staff", "", None)


@pytest.fixture(name="staff_client")
def superuser_client(staff) -> Client:
    """The superuser logged in, for the admin."""
    return client_for(staff)


@pytest.fixture(name="owner_client")
def owner_key_client(owner) -> Client:
    """The owner as a script: a bearer API key, CSRF enforced."""
    return key_client(make_api_key(owner))


@pytest.fixture(name="outsider_client")
def outsider_key_client(outsider) -> Client:
    """The outsider as a script: a bearer API key, CSRF enforced."""
    return key_client(make_api_key(outsider))
