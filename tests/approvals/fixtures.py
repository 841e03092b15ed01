"""Fixtures of the approvals API and page tests: the staff member who decides, and the clients.
Import the ones a module needs (with `# noqa: F401`); the admin tests use the superuser of
`tests.support.fixtures` instead, and the API tests its key clients for owner and outsider."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.support.api import key_client, make_api_key
from tests.support.fixtures import client_for


@pytest.fixture(name="staff")
def staff_member(db):
    """Staff, not superuser: may decide anyone's approval, holds no permission by default."""
    return get_user_model().objects.create_user("staff", password="staff-pass-123", is_staff=True)


@pytest.fixture(name="staff_client")
def staff_key_client(staff) -> Client:
    """The staff member as a script: a bearer API key, CSRF enforced."""
    return key_client(make_api_key(staff))


@pytest.fixture(name="owner_client")
def owner_session_client(owner) -> Client:
    """The owner logged in to the pages."""
    return client_for(owner)


@pytest.fixture(name="outsider_client")
def outsider_session_client(outsider) -> Client:
    """The outsider logged in to the pages."""
    return client_for(outsider)
