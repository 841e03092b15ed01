"""The approvals REST API: the YOLO preference and its permission."""

import pytest

from agents_app.approvals.rules import yolo_grant
from agents_app.models import Approval, AuditEvent, UserPreferences
from tests.support.api import assert_error, put_json
from tests.support.approvals import SCRIPT, drive, parked
from tests.support.runs import make_run
from tests.support.scripted_provider import ScriptedProvider

pytestmark = pytest.mark.django_db(transaction=True)

PREFERENCES = "/api/v1/preferences"


def test_preferences_start_with_yolo_off_and_not_permitted(owner_api):
    owner_client = owner_api
    assert owner_client.get(PREFERENCES).json() == {"yolo": False, "yolo_permitted": False}


@pytest.mark.dialect
def test_yolo_cannot_be_turned_on_without_the_permission(owner, owner_api, registry):
    error = assert_error(put_json(owner_api, PREFERENCES, {"yolo": True}), 403, "FORBIDDEN")

    assert error["details"] == {"permission": "agents_app.use_yolo_mode"}
    assert not UserPreferences.objects.filter(user=owner, yolo=True).exists()
    assert not AuditEvent.objects.filter(action="yolo.enable").exists()
    parked(owner, registry)


@pytest.mark.dialect
def test_with_the_permission_yolo_turns_on_and_calls_stop_asking(
    owner, staff, owner_api, send, registry
):
    owner_client = owner_api
    yolo_grant(user=owner, granted=True, actor=staff, interface="admin")
    assert owner_client.get(PREFERENCES).json() == {"yolo": False, "yolo_permitted": True}

    response = put_json(owner_client, PREFERENCES, {"yolo": True})

    assert response.status_code == 200
    assert response.json() == {"yolo": True, "yolo_permitted": True}
    audit = AuditEvent.objects.get(action="yolo.enable")
    assert (audit.interface, audit.actor) == ("api", owner)
    run = make_run(owner)
    drive(run, ScriptedProvider(SCRIPT), registry)
    assert run.status == "succeeded" and len(send.calls) == 1
    assert not Approval.objects.exists()
    call = AuditEvent.objects.get(run_id=run.pk, action="tool.call")
    assert call.details["approval"] == "yolo"


@pytest.mark.dialect
def test_yolo_is_turned_off_again(owner, staff, owner_api, registry):
    yolo_grant(user=owner, granted=True, actor=staff, interface="admin")
    put_json(owner_api, PREFERENCES, {"yolo": True})

    response = put_json(owner_api, PREFERENCES, {"yolo": False})

    assert response.json() == {"yolo": False, "yolo_permitted": True}
    assert AuditEvent.objects.filter(action="yolo.disable", interface="api").count() == 1
    parked(owner, registry)


@pytest.mark.parametrize("body", [{}, {"yolo": "sometimes"}, {"yolo": None}])
def test_a_bad_preferences_body_is_refused(owner_api, body):
    assert_error(put_json(owner_api, PREFERENCES, body), 400, "VALIDATION_ERROR")
