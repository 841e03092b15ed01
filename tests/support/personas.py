"""The people of the test suite, defined once and meaning the same everywhere. Registered for
every test by `pytest_plugins` in tests/conftest.py: ask for one by naming it.

Personas, each a user in the test database:
    owner       an ordinary user; the runs, approvals and keys under test are theirs
    teammate    a second ordinary user, for a test that needs two people who own things
    outsider    an ordinary user who owns nothing of the owner's: sees 404s, hears nothing
    staff       is_staff, not a superuser: may decide anyone's approval, holds no permission
    superuser   for the Django admin
`staff` and `superuser` are both named "staff" (the rows a person writes in the admin or over
the API carry that name, and the tests read it), so a test takes one of them, never both.

Clients, `<persona>_<interface>`:
    <persona>_api      the persona as a script: a bearer API key, no cookies, CSRF enforced
    <persona>_session  the persona logged in to the pages, as a browser is after signing in
    superuser_admin    the superuser logged in to the admin
    <persona>_mcp      an MCP client over a real daphne (tests/api/mcp_server/conftest.py,
                       beside the server it needs)
A test whose assertions were written against an older, shorter name keeps it as a local
(`owner_client = owner_api`): the assertions stay exactly as they were.

Passwords are hashed with a fast hasher (`fast_password_hashing`, autouse); the browser tests,
which sign in through a daphne whose settings lack it, turn it off in tests/browser/conftest.py.
"""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.support.clients import key_client, logged_in, make_api_key


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Autouse, so it applies before the persona fixtures hash their passwords."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def owner(db):
    return get_user_model().objects.create_user("owner", password="owner-pass-123")


@pytest.fixture
def teammate(db):
    return get_user_model().objects.create_user("teammate", password="teammate-pass-123")


@pytest.fixture
def outsider(db):
    return get_user_model().objects.create_user("outsider", password="outsider-pass-123")


@pytest.fixture
def staff(db):
    """Staff, not superuser: may decide anyone's approval, holds no permission by default."""
    return get_user_model().objects.create_user("staff", password="staff-pass-123", is_staff=True)


@pytest.fixture
def superuser(db):
    """A superuser, for the admin."""
    return get_user_model().objects.create_superuser("staff", password="staff-pass-123")


@pytest.fixture
def owner_api(owner) -> Client:
    return key_client(make_api_key(owner))


@pytest.fixture
def teammate_api(teammate) -> Client:
    return key_client(make_api_key(teammate))


@pytest.fixture
def outsider_api(outsider) -> Client:
    return key_client(make_api_key(outsider))


@pytest.fixture
def staff_api(staff) -> Client:
    return key_client(make_api_key(staff))


@pytest.fixture
def owner_session(owner) -> Client:
    return logged_in(owner)


@pytest.fixture
def teammate_session(teammate) -> Client:
    return logged_in(teammate)


@pytest.fixture
def outsider_session(outsider) -> Client:
    return logged_in(outsider)


@pytest.fixture
def staff_session(staff) -> Client:
    return logged_in(staff)


@pytest.fixture
def superuser_admin(superuser) -> Client:
    return logged_in(superuser)
