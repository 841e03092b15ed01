import pytest
from django.test import Client

from tests.support.fixtures import fast_password_hashing, outsider_key_client, owner_key_client  # noqa: F401


@pytest.fixture
def anonymous_client(db) -> Client:
    return Client(enforce_csrf_checks=True)
