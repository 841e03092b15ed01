import json

import pytest

from agents_app.models import AuditEvent, Webhook, WebhookDelivery
from agents_app.webhooks.services import webhook_create
from tests.support.addresses import DISGUISED_PRIVATE_HOSTS, PLAIN_PRIVATE_HOSTS
from tests.support.api import assert_error

PUBLIC_URL = "https://93.184.215.14/hook"


def post(client, body):
    return client.post("/api/v1/webhooks", json.dumps(body), content_type="application/json")


def test_it_registers_a_webhook_and_shows_the_secret_once(owner_api, owner):
    response = post(owner_api, {"url": PUBLIC_URL, "events": ["run.finished"]})
    assert response.status_code == 201, response.content
    body = response.json()
    hook = Webhook.objects.get(pk=body["id"])
    assert (hook.owner, hook.url, hook.events) == (owner, PUBLIC_URL, ["run.finished"])
    assert body["secret"] == hook.secret and hook.secret.startswith("whsec_")
    listed = owner_api.get("/api/v1/webhooks").json()["results"]
    assert [h["id"] for h in listed] == [hook.pk] and "secret" not in listed[0]
    assert AuditEvent.objects.filter(action="webhook.create", actor=owner).exists()


def test_it_defaults_to_every_event_type(owner_api):
    body = post(owner_api, {"url": PUBLIC_URL}).json()
    assert body["events"] == ["run.finished", "approval.required"]


def test_it_refuses_an_unknown_event_type(owner_api):
    error = assert_error(
        post(owner_api, {"url": PUBLIC_URL, "events": ["run.exploded"]}),
        400,
        "VALIDATION_ERROR",
    )
    # The schema lists the event types (an enum in OpenAPI), so it names the bad one.
    assert [problem["field"] for problem in error["details"]["errors"]] == ["events.0"]


def test_it_refuses_a_url_that_is_not_http(owner_api):
    error = assert_error(post(owner_api, {"url": "ftp://93.184.215.14/x"}), 400, "VALIDATION_ERROR")
    assert error["details"] == {"field": "url"}


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8000/hook", "http://10.1.2.3/hook", "http://[::1]/hook"]
)
def test_it_refuses_a_private_url(owner_api, url):
    error = assert_error(post(owner_api, {"url": url}), 400, "VALIDATION_ERROR")
    assert "private" in error["message"]
    assert not Webhook.objects.exists()


@pytest.mark.parametrize("host", DISGUISED_PRIVATE_HOSTS + PLAIN_PRIVATE_HOSTS)
def test_it_refuses_a_private_address_spelt_as_ipv6(owner_api, host):
    error = assert_error(post(owner_api, {"url": f"http://{host}/hook"}), 400, "VALIDATION_ERROR")
    assert "private" in error["message"]
    assert not Webhook.objects.exists()


def test_it_accepts_a_private_url_when_allowed(owner_api, allow_private):
    owner_client = owner_api
    assert post(owner_client, {"url": "http://127.0.0.1:8000/hook"}).status_code == 201


def test_a_registration_that_cannot_be_audited_registers_nothing(owner):
    with pytest.raises(ValueError):
        webhook_create(
            owner=owner, interface="carrier pigeon", url=PUBLIC_URL, events=["run.finished"]
        )

    assert not Webhook.objects.exists()


def test_the_owner_deletes_a_webhook(owner_api, owner, hook_for):
    owner_client = owner_api
    hook = hook_for(owner, PUBLIC_URL)
    assert owner_client.delete(f"/api/v1/webhooks/{hook.pk}").status_code == 204
    assert not Webhook.objects.filter(pk=hook.pk).exists()
    assert AuditEvent.objects.filter(action="webhook.delete", target=PUBLIC_URL).exists()


def test_the_owner_reads_the_delivery_log(owner_api, owner, hook_for):
    hook = hook_for(owner, PUBLIC_URL)
    WebhookDelivery.objects.create(webhook=hook, event_type="run.finished", payload={"run_id": 1})
    body = owner_api.get(f"/api/v1/webhooks/{hook.pk}/deliveries").json()
    assert body["count"] == 1
    [delivery] = body["results"]
    assert (delivery["status"], delivery["attempts"], delivery["payload"]) == (
        "pending",
        0,
        {"run_id": 1},
    )


def test_an_outsider_gets_not_found_for_another_users_webhook(outsider_api, owner, hook_for):
    outsider_client = outsider_api
    hook = hook_for(owner, PUBLIC_URL)
    assert_error(outsider_client.delete(f"/api/v1/webhooks/{hook.pk}"), 404, "NOT_FOUND")
    assert_error(outsider_client.get(f"/api/v1/webhooks/{hook.pk}/deliveries"), 404, "NOT_FOUND")
    assert outsider_client.get("/api/v1/webhooks").json()["results"] == []
    assert Webhook.objects.filter(pk=hook.pk).exists()


def test_it_needs_an_api_key(db):
    from django.test import Client

    assert_error(Client().get("/api/v1/webhooks"), 401, "UNAUTHORIZED")


def test_a_deletion_that_fails_leaves_no_audit_row_claiming_it(owner, hook_for, monkeypatch):
    from agents_app.webhooks.services import webhook_delete

    hook = hook_for(owner, PUBLIC_URL)

    def refuse(self, *args, **kwargs):
        raise RuntimeError("the database said no")

    monkeypatch.setattr(Webhook, "delete", refuse)
    with pytest.raises(RuntimeError):
        webhook_delete(webhook=hook, actor=owner, interface="api")

    assert Webhook.objects.filter(pk=hook.pk).exists()
    assert not AuditEvent.objects.filter(action="webhook.delete").exists()
