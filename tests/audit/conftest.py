import pytest
from django.test import Client

from tests.support.api import key_client, make_api_key
from tests.support.fixtures import (
    client_for,
    fast_password_hashing,  # noqa: F401
    superuser_client,  # noqa: F401
    superuser_staff,  # noqa: F401
)


@pytest.fixture
def owner_api(owner) -> Client:
    """The owner as a script: a bearer key, CSRF enforced."""
    return key_client(make_api_key(owner))


@pytest.fixture
def owner_browser(owner) -> Client:
    """The owner logged in to the pages."""
    return client_for(owner)
