from agents_app.models import WebhookDelivery


def test_staff_see_the_secret_and_the_delivery_log(superuser_admin, owner, hook_for):
    hook = hook_for(owner, "https://93.184.215.14/hook")
    WebhookDelivery.objects.create(webhook=hook, event_type="run.finished", status="failed")
    page = superuser_admin.get(f"/admin/agents_app/webhook/{hook.pk}/change/")
    assert hook.secret in page.content.decode()
    log = superuser_admin.get("/admin/agents_app/webhookdelivery/?status__exact=failed")
    assert log.status_code == 200 and "run.finished" in log.content.decode()


def test_the_admin_refuses_a_private_url(superuser_admin, owner):
    response = superuser_admin.post(
        "/admin/agents_app/webhook/add/",
        {"owner": owner.pk, "url": "http://127.0.0.1/hook", "events": '["run.finished"]'},
    )
    assert response.status_code == 200 and "private" in response.content.decode()


def test_retry_now_requeues_failed_deliveries(
    superuser_admin, owner, hook_for, django_capture_on_commit_callbacks
):
    hook = hook_for(owner, "https://93.184.215.14/hook")
    failed = WebhookDelivery.objects.create(
        webhook=hook, event_type="run.finished", status="failed"
    )
    with django_capture_on_commit_callbacks() as callbacks:
        superuser_admin.post(
            "/admin/agents_app/webhookdelivery/",
            {"action": "retry_now", "_selected_action": [failed.pk]},
        )
    failed.refresh_from_db()
    assert failed.status == "pending" and len(callbacks) == 1
