import pytest
from django.test import Client


@pytest.fixture
def anonymous_client(db) -> Client:
    return Client(enforce_csrf_checks=True)
