"""The migration that scrubs secrets stored before every text went through one redaction point
(agents_app/migrations/0017_scrub_stored_secrets.py): a connection's key read from the
environment, in its encodings, and tokens of a known shape leave every table it covers, and
running it again changes nothing."""

import base64
import importlib
import json

import pytest
from django.apps import apps

from agents_app.models import AuditEvent, AuditInterface, LLMConnection, Run, RunEvent
from tests.support.runs import make_run

# It writes rows of every table itself, secrets in them (not events as the emitters build them).
pytestmark = [pytest.mark.dialect, pytest.mark.fabricated_events]

scrub = importlib.import_module("agents_app.migrations.0017_scrub_stored_secrets").scrub

# A variable not named like a secret: only the connection's reference says it holds one.
KEY = "gw-Stored0123456789abcdefXYZ"
TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4"


def stored() -> str:
    tables = (LLMConnection, Run, RunEvent, AuditEvent)
    return json.dumps([list(model.objects.values()) for model in tables], default=str)


def test_stored_keys_and_known_tokens_are_scrubbed_from_every_table_once(owner, monkeypatch):
    monkeypatch.setenv("GATEWAY_ONE", KEY)
    LLMConnection.objects.create(
        name="gw",
        base_url="https://gw.example/v1",
        model="m",
        api_key="${GATEWAY_ONE}",
    )
    LLMConnection.objects.filter(name="gw").update(last_error=f"Received API Key = Bearer {KEY}")
    run = make_run(owner)
    Run.objects.filter(pk=run.pk).update(error_message=f"the server said {KEY.upper()}")
    RunEvent.objects.create(
        run=run,
        seq=99,
        type="error",
        payload={"details": {"server": base64.b64encode(f"u:{KEY}".encode()).decode()}},
    )
    AuditEvent.objects.create(
        action="tool.call",
        interface=AuditInterface.WORKER,
        actor_label="worker",
        run_id=run.pk,
        details={"error": f"token {TOKEN} refused"},
    )
    assert KEY in stored() and TOKEN in stored()

    scrub(apps, None)
    once = stored()
    scrub(apps, None)

    assert KEY not in once and KEY.upper() not in once and TOKEN not in once
    assert "[redacted]" in RunEvent.objects.get(run=run, seq=99).payload["details"]["server"]
    assert "Received API Key = Bearer [redacted]" in once
    assert stored() == once
