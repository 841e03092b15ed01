"""Who may call the API: bearer API keys for scripts and apps, the login session for browsers."""

import hashlib
import re
from datetime import timedelta

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.utils import timezone

from agents_app.core.api_keys import LAST_USED_RESOLUTION
from agents_app.models import API_KEY_PREFIX, ApiKey, Run, Task
from tests.support.api import assert_error, submit
from tests.support.clients import key_client, make_api_key

RUNS = "/api/v1/runs"
RAW_KEY = re.compile(API_KEY_PREFIX + r"[A-Za-z0-9_-]{40,}")

pytestmark = pytest.mark.usefixtures("llm_configured")


# --- API keys ---------------------------------------------------------------------------------


def test_a_bearer_key_authenticates_a_get(owner, owner_api):
    response = owner_api.get(RUNS)

    assert response.status_code == 200


def test_a_bearer_key_authenticates_a_post_without_any_csrf_token(owner, owner_api):
    response = submit(owner_api)

    assert response.status_code == 202
    assert Run.objects.get().owner == owner


def test_an_unknown_key_is_refused(db):
    client = key_client(ApiKey.generate())

    assert_error(client.get(RUNS), 401, "UNAUTHORIZED")
    assert_error(submit(client), 401, "UNAUTHORIZED")
    assert not Task.objects.exists()


def test_a_revoked_key_is_refused(owner):
    client = key_client(make_api_key(owner, revoked=True))

    assert_error(client.get(RUNS), 401, "UNAUTHORIZED")
    assert_error(submit(client), 401, "UNAUTHORIZED")
    assert not Task.objects.exists()


def test_a_key_of_an_inactive_user_is_refused(owner):
    client = key_client(make_api_key(owner))
    owner.is_active = False
    owner.save()

    assert_error(client.get(RUNS), 401, "UNAUTHORIZED")
    assert_error(submit(client), 401, "UNAUTHORIZED")


def test_the_hash_of_a_key_is_refused_as_a_key(owner):
    raw = make_api_key(owner)
    client = key_client(ApiKey.hash(raw))

    assert_error(client.get(RUNS), 401, "UNAUTHORIZED")


@pytest.mark.parametrize(
    "header", ["Basic b3duZXI6b3duZXItcGFzcy0xMjM=", "Bearer", "Bearer ", "Token adk_x", "adk_x"]
)
def test_a_malformed_authorization_header_is_refused(db, header):
    client = Client(enforce_csrf_checks=True, headers={"authorization": header})

    assert_error(client.get(RUNS), 401, "UNAUTHORIZED")


@pytest.mark.parametrize(
    "header", ["Basic b3duZXI6b3duZXItcGFzcy0xMjM=", "Token adk_secret_value", "adk_secret_value"]
)
def test_an_authorization_header_is_never_logged(db, settings, caplog, header):
    settings.DEBUG = True  # ninja logged other schemes in full only with DEBUG on
    client = Client(enforce_csrf_checks=True, headers={"authorization": header})

    with caplog.at_level("DEBUG"):
        assert_error(client.get(RUNS), 401, "UNAUTHORIZED")

    credential = header.split(" ")[-1]
    assert not [r.getMessage() for r in caplog.records if credential in r.getMessage()]


def test_an_anonymous_client_is_refused_with_a_hint(anonymous_client):
    error = assert_error(anonymous_client.get(RUNS), 401, "UNAUTHORIZED")

    assert "Bearer" in error["message"]


def test_an_anonymous_post_hears_401_not_a_csrf_failure(anonymous_client):
    assert_error(submit(anonymous_client), 401, "UNAUTHORIZED")


@pytest.mark.dialect
def test_using_a_key_records_when_it_was_last_used(owner):
    raw = make_api_key(owner)

    key_client(raw).get(RUNS)

    last_used = ApiKey.objects.get().last_used_at
    assert last_used is not None
    assert timezone.now() - last_used < timedelta(seconds=10)


@pytest.mark.dialect
def test_a_key_used_again_within_a_minute_keeps_its_last_used_time(owner):
    earlier = timezone.now() - LAST_USED_RESOLUTION / 2
    raw = make_api_key(owner, last_used_at=earlier)

    key_client(raw).get(RUNS)

    assert ApiKey.objects.get().last_used_at == earlier


@pytest.mark.dialect
def test_a_key_used_after_a_minute_updates_its_last_used_time(owner):
    earlier = timezone.now() - LAST_USED_RESOLUTION * 2
    raw = make_api_key(owner, last_used_at=earlier)

    key_client(raw).get(RUNS)

    assert ApiKey.objects.get().last_used_at > earlier


def test_a_key_is_stored_as_its_sha256_only(owner):
    raw = make_api_key(owner)

    key = ApiKey.objects.get()
    assert raw.startswith(API_KEY_PREFIX)
    assert key.key_hash == hashlib.sha256(raw.encode()).hexdigest()
    assert key.key_hash != raw
    assert key.prefix == raw[: len(API_KEY_PREFIX) + 6]
    assert raw not in {key.name, key.prefix, key.key_hash}


def test_generated_keys_are_long_and_distinct():
    keys = {ApiKey.generate() for _ in range(50)}

    assert len(keys) == 50
    assert all(k.startswith(API_KEY_PREFIX) and len(k) >= 40 for k in keys)


# --- the admin issues keys ----------------------------------------------------------------------


def add_key_in_admin(client: Client, user) -> tuple[object, str]:
    """Submit the admin's add form; return the response and the one message with a raw key."""
    response = client.post(
        "/admin/agents_app/apikey/add/", {"user": user.pk, "name": "phone", "_save": "Save"}
    )
    assert response.status_code == 302
    messages = [str(m) for m in get_messages(response.wsgi_request)]
    [message] = [m for m in messages if RAW_KEY.search(m)]
    return response, message


def test_the_admin_shows_a_new_key_once_and_stores_only_its_hash(superuser_admin, owner):
    staff_client = superuser_admin
    response, message = add_key_in_admin(staff_client, owner)

    raw = RAW_KEY.search(message).group()
    assert "cannot be shown again" in message
    key = ApiKey.objects.get()
    assert (key.user, key.name, key.revoked) == (owner, "phone", False)
    assert key.key_hash == hashlib.sha256(raw.encode()).hexdigest()
    assert key.key_hash != raw
    assert key.prefix == raw[:10]

    list_page = staff_client.get(response.url).content.decode()
    change_page = staff_client.get(f"/admin/agents_app/apikey/{key.pk}/change/").content.decode()
    assert raw in list_page  # the message, shown on the page after the redirect
    assert raw not in staff_client.get(response.url).content.decode()
    assert raw not in change_page
    assert key.prefix in change_page


def test_a_key_issued_by_the_admin_works_against_the_api(superuser_admin, owner):
    _, message = add_key_in_admin(superuser_admin, owner)
    raw = RAW_KEY.search(message).group()

    response = submit(key_client(raw))

    assert response.status_code == 202
    assert Run.objects.get().owner == owner


def test_a_key_revoked_in_the_admin_stops_working(superuser_admin, owner):
    raw = make_api_key(owner)
    key = ApiKey.objects.get()

    superuser_admin.post(
        f"/admin/agents_app/apikey/{key.pk}/change/",
        {"user": owner.pk, "name": key.name, "revoked": "on", "_save": "Save"},
    )

    assert ApiKey.objects.get().revoked
    assert_error(key_client(raw).get(RUNS), 401, "UNAUTHORIZED")


# --- the login session ----------------------------------------------------------------------


@pytest.fixture
def session_client(owner) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    return client


def csrf_token(client: Client) -> str:
    """Load a page that sets the CSRF cookie, as a browser would, and return the token."""
    client.get("/admin/login/")
    return client.cookies["csrftoken"].value


def test_a_logged_in_session_authenticates_a_get(owner, session_client):
    response = session_client.get(RUNS)

    assert response.status_code == 200


def test_a_session_post_without_a_csrf_token_is_forbidden(session_client):
    response = submit(session_client)

    error = assert_error(response, 403, "FORBIDDEN")
    assert "CSRF" in error["message"]
    assert not Task.objects.exists()


def test_a_session_post_with_a_wrong_csrf_token_is_forbidden(session_client):
    csrf_token(session_client)

    response = submit(session_client, headers={"x-csrftoken": "x" * 32})

    assert_error(response, 403, "FORBIDDEN")
    assert not Task.objects.exists()


def test_a_session_post_with_the_csrf_token_is_accepted(owner, session_client):
    token = csrf_token(session_client)

    response = submit(session_client, headers={"x-csrftoken": token})

    assert response.status_code == 202
    assert Run.objects.get().owner == owner


def test_a_bearer_key_needs_no_csrf_token_even_beside_a_session(owner, outsider):
    client = key_client(make_api_key(outsider))
    client.force_login(owner)

    response = submit(client)

    assert response.status_code == 202
    assert Run.objects.get().owner == outsider


def test_a_logged_out_session_is_refused(owner, session_client):
    session_client.logout()

    assert_error(session_client.get(RUNS), 401, "UNAUTHORIZED")
    assert_error(submit(session_client), 401, "UNAUTHORIZED")
