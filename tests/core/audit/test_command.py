"""`manage.py audit_export [--since ISO] [--run ID] [PATH|-]`."""

import io
import json
from datetime import UTC, datetime

import pytest
from django.core.management import CommandError, call_command

from agents_app.core.audit import audit_record
from agents_app.models import AuditEvent
from tests.support.runs import make_run

pytestmark = pytest.mark.dialect


@pytest.fixture
def events(owner):
    first, second = make_run(owner), make_run(owner)
    made = [
        audit_record(action="task.submit", interface="api", actor=owner, run=first),
        audit_record(action="llm.call", interface="worker", run=first, details={"model": "m"}),
        audit_record(action="task.submit", interface="mcp", actor=owner, run=second),
    ]
    # Rows are never changed by the product; a test moves one into the past with raw SQL.
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {AuditEvent._meta.db_table} SET created_at = %s WHERE id = %s",
            [datetime(2020, 1, 1, 12, tzinfo=UTC), made[0].pk],
        )
    return made


def export(*args: str) -> list[dict]:
    out = io.StringIO()
    call_command("audit_export", *args, stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_it_writes_every_event_to_stdout_oldest_first(events):
    lines = export()

    assert [line["id"] for line in lines] == [e.pk for e in events]
    assert lines[1]["details"] == {"model": "m"}
    assert lines[2]["interface"] == "mcp"


def test_it_keeps_only_one_run(events):
    assert [line["id"] for line in export("--run", str(events[2].run_id))] == [events[2].pk]


def test_it_keeps_only_events_since_a_date_or_a_moment(events):
    assert [line["id"] for line in export("--since", "2021-01-01")] == [e.pk for e in events[1:]]
    assert len(export("--since", "2020-01-01T11:00:00")) == 3
    assert len(export("--since", "2020-01-01T12:00:01+00:00")) == 2


def test_it_writes_a_file(events, tmp_path):
    path = tmp_path / "audit.jsonl"
    err = io.StringIO()

    call_command("audit_export", str(path), "--run", str(events[0].run_id), stderr=err)

    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [line["action"] for line in lines] == ["task.submit", "llm.call"]
    assert f"Wrote 2 audit event(s) to {path}." in err.getvalue()


def test_a_since_that_is_not_a_date_is_refused(db):
    with pytest.raises(CommandError, match="not an ISO date"):
        call_command("audit_export", "--since", "yesterday")
