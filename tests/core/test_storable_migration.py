"""The migration that makes text already stored in JSON columns storable
(agents_app/migrations/0018_storable_json_text.py): a run whose tool call SQLite kept with a
lone surrogate in its arguments (before such calls were refused) renders again."""

import importlib
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.db import connection

from agents_app.models import AuditEvent, AuditInterface, RunEvent, ToolCall
from tests.support.runs import add_plan, make_run

make_storable = importlib.import_module(
    "agents_app.migrations.0018_storable_json_text"
).make_storable

pytestmark = pytest.mark.skipif(
    connection.vendor != "sqlite", reason="only SQLite could store a lone surrogate"
)


@pytest.mark.fabricated_events  # it stores a tool_call event of its own making
def test_a_lone_surrogate_stored_in_json_becomes_a_replacement_character(owner, owner_session):
    run = make_run(owner)
    step = add_plan(run, ["write it"]).steps.get(index=0)
    bad = {"path": "bad\udcff.md", "note": "a\x00b", "fine": "\U0001f600"}
    call = ToolCall.objects.create(run=run, step=step, tool="write_file", arguments=bad)
    RunEvent.objects.create(run=run, seq=99, type="tool_call", payload={"arguments": bad})
    audit = AuditEvent.objects.create(
        action="tool.call", interface=AuditInterface.WORKER, actor_label="worker", details=bad
    )

    make_storable(apps, SimpleNamespace(connection=connection))

    fixed = {"path": "bad\ufffd.md", "note": "a\ufffdb", "fine": "\U0001f600"}
    call.refresh_from_db()
    assert call.arguments == fixed
    assert RunEvent.objects.get(run=run, seq=99).payload == {"arguments": fixed}
    assert AuditEvent.objects.get(pk=audit.pk).details == fixed
    assert owner_session.get(f"/runs/{run.pk}/").status_code == 200
