"""API keys on the Settings page: a person creates one (shown once), sees their own, revokes
one, and a revoked key stops working on the REST API at once."""

import pytest
from django.test import Client

from agents_app.core.api_keys import MAX_ACTIVE_KEYS
from agents_app.models import ApiKey, AuditEvent
from tests.support.clients import key_client, make_api_key
from tests.support.markup import by_id, ids
from tests.support.runs import make_run

pytestmark = pytest.mark.django_db


def create_key(session: Client, name: str = "my phone") -> tuple[ApiKey, str]:
    response = session.post("/settings/api-keys/", {"name": name})
    assert response.status_code == 200
    raw_key = by_id(response.content.decode(), "new-api-key-value")["value"]
    return ApiKey.objects.get(key_hash=ApiKey.hash(raw_key)), raw_key


def test_creating_a_key_shows_it_once_and_the_list_shows_only_its_prefix(owner, owner_session):
    response = owner_session.post("/settings/api-keys/", {"name": "  my phone "})

    html = response.content.decode()
    raw_key = by_id(html, "new-api-key-value")["value"]
    key = ApiKey.objects.get(user=owner)
    assert raw_key.startswith("adk_") and key.key_hash == ApiKey.hash(raw_key)
    assert key.name == "my phone" and raw_key.startswith(key.prefix)
    assert "Copy it now: you won't see it again." in html
    assert response["Cache-Control"] == "no-store"
    assert "copy-api-key" in ids(html)

    later = owner_session.get("/settings/").content.decode()
    assert raw_key not in later and "new-api-key" not in ids(later)
    assert f"api-key-{key.pk}" in ids(later)
    assert f"{key.prefix}…" in later and "my phone" in later and "never" in later
    assert by_id(later, f"api-key-{key.pk}")["data-state"] == "active"


def test_creating_a_key_is_audited_without_the_key(owner, owner_session):
    key, raw_key = create_key(owner_session)

    audit = AuditEvent.objects.get(action="api_key.create")
    assert (audit.actor, audit.interface, audit.target) == (owner, "web", "my phone")
    assert audit.details == {"api_key_id": key.pk, "prefix": key.prefix}
    assert raw_key not in str(audit.as_json())


@pytest.mark.dialect
def test_the_list_shows_when_a_key_was_last_used(owner, owner_session):
    key, raw_key = create_key(owner_session)

    assert key_client(raw_key).get("/api/v1/runs").status_code == 200

    key.refresh_from_db()
    assert key.last_used_at is not None
    row = owner_session.get("/settings/").content.decode().split(f'id="api-key-{key.pk}"')[1]
    assert key.last_used_at.strftime("%b") in row.split("</tr>")[0]
    assert "never" not in row.split("</tr>")[0]


@pytest.mark.dialect
def test_the_created_key_lists_runs_over_rest_until_it_is_revoked(owner, owner_session):
    run = make_run(owner)
    key, raw_key = create_key(owner_session)
    script = key_client(raw_key)

    listed = script.get("/api/v1/runs")
    assert listed.status_code == 200
    assert [r["id"] for r in listed.json()["results"]] == [run.pk]

    response = owner_session.post(f"/settings/api-keys/{key.pk}/revoke/", follow=True)

    assert "Revoked “my phone”" in response.content.decode()
    refused = script.get("/api/v1/runs")
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "UNAUTHORIZED"
    html = owner_session.get("/settings/").content.decode()
    assert by_id(html, f"api-key-{key.pk}")["data-state"] == "revoked"
    assert f"revoke-api-key-{key.pk}" not in ids(html)
    audit = AuditEvent.objects.get(action="api_key.revoke")
    assert (audit.actor, audit.target, audit.details["api_key_id"]) == (owner, "my phone", key.pk)


def test_the_list_shows_only_your_own_keys(owner, outsider, owner_session):
    make_api_key(outsider, name="outsider laptop")
    mine, _ = create_key(owner_session, "owner tablet")

    html = owner_session.get("/settings/").content.decode()

    assert [i for i in ids(html) if i.startswith("api-key-") and i[8:].isdigit()] == [
        f"api-key-{mine.pk}"
    ]
    assert "outsider laptop" not in html


@pytest.mark.dialect
def test_revoking_someone_elses_key_answers_404_and_leaves_it_working(outsider, owner_session):
    raw_key = make_api_key(outsider, name="theirs")
    key = ApiKey.objects.get(user=outsider)

    response = owner_session.post(f"/settings/api-keys/{key.pk}/revoke/")

    assert response.status_code == 404
    key.refresh_from_db()
    assert not key.revoked
    assert key_client(raw_key).get("/api/v1/runs").status_code == 200
    assert not AuditEvent.objects.filter(action="api_key.revoke").exists()


@pytest.mark.dialect
def test_revoking_a_key_id_no_key_can_have_answers_404(owner_session):
    assert owner_session.post(f"/settings/api-keys/{2**63}/revoke/").status_code == 404
    assert owner_session.post("/settings/api-keys/999999/revoke/").status_code == 404


@pytest.mark.dialect
@pytest.mark.parametrize("name", ["", "   "])
def test_a_key_without_a_name_is_refused_with_a_form_error(owner, owner_session, name):
    response = owner_session.post("/settings/api-keys/", {"name": name})

    html = response.content.decode()
    assert response.status_code == 400
    error = by_id(html, "api-key-name-error")
    assert error["data-code"] == "VALIDATION_ERROR"
    assert "Give the key a name" in html
    assert by_id(html, "api-key-name")["aria-invalid"] == "true"
    assert "new-api-key" not in ids(html)
    assert not ApiKey.objects.filter(user=owner).exists()


@pytest.mark.dialect
def test_a_name_longer_than_100_characters_is_refused_and_kept_in_the_form(owner, owner_session):
    name = "x" * 101

    response = owner_session.post("/settings/api-keys/", {"name": name})

    html = response.content.decode()
    assert response.status_code == 400
    assert "at most 100 characters (this one has 101)" in html
    assert by_id(html, "api-key-name")["value"] == name
    assert not ApiKey.objects.filter(user=owner).exists()


@pytest.mark.dialect
def test_a_21st_active_key_is_refused_but_revoked_keys_do_not_count(owner, owner_session):
    for number in range(MAX_ACTIVE_KEYS):
        make_api_key(owner, name=f"key {number}")
    make_api_key(owner, name="old", revoked=True)

    response = owner_session.post("/settings/api-keys/", {"name": "one more"})

    html = response.content.decode()
    assert response.status_code == 409
    assert 'data-code="CONFLICT"' in html
    assert "You already have 20 active API keys" in html and "revoke one" in html
    assert ApiKey.objects.filter(user=owner).count() == MAX_ACTIVE_KEYS + 1

    first = ApiKey.objects.filter(user=owner, revoked=False).first()
    owner_session.post(f"/settings/api-keys/{first.pk}/revoke/")
    assert owner_session.post("/settings/api-keys/", {"name": "one more"}).status_code == 200


def test_revoking_a_key_without_the_csrf_token_is_refused(owner):
    raw_key = make_api_key(owner)
    key = ApiKey.objects.get(user=owner)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(owner)

    response = browser.post(f"/settings/api-keys/{key.pk}/revoke/")

    assert response.status_code == 403
    key.refresh_from_db()
    assert not key.revoked
    assert key_client(raw_key).get("/api/v1/runs").status_code == 200


def test_creating_a_key_without_the_csrf_token_is_refused(owner):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(owner)

    assert browser.post("/settings/api-keys/", {"name": "phone"}).status_code == 403
    assert not ApiKey.objects.exists()


def test_signed_out_people_are_sent_to_log_in(owner):
    response = Client().post("/settings/api-keys/", {"name": "phone"})

    assert response.status_code == 302 and response["Location"].startswith("/login/")
    assert not ApiKey.objects.exists()


def test_the_keys_form_only_accepts_posts(owner_session):
    assert owner_session.get("/settings/api-keys/").status_code == 405


def test_the_settings_page_links_to_the_rest_api_reference_that_opens_signed_in(owner_session):
    html = owner_session.get("/settings/").content.decode()

    href = by_id(html, "api-docs-link")["href"]
    assert href == "/api/docs"
    docs = owner_session.get(href)
    assert docs.status_code == 200 and b"openapi.json" in docs.content
