"""What an MCP client asks for is in the audit log as the key owner's act over `mcp`."""

import pytest

from agents_app.models import AuditEvent
from tests.support.runs import make_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_submit_cancel_and_restart_over_mcp_are_recorded_as_the_key_owner_s_acts(owner_mcp, owner):
    submitted = owner_mcp.call("submit_task", {"task": "Write a haiku"}).structured_content
    run = make_run(owner)
    owner_mcp.call("cancel_run", {"run_id": run.pk})
    restarted = owner_mcp.call("restart_run", {"run_id": run.pk}).structured_content

    events = AuditEvent.objects.order_by("pk")
    assert [(e.action, e.interface, e.actor_id, e.run_id) for e in events] == [
        ("task.submit", "mcp", owner.pk, submitted["run_id"]),
        ("run.cancel", "mcp", owner.pk, run.pk),
        ("run.restart", "mcp", owner.pk, run.pk),
    ]
    assert events.last().details == {"new_run_id": restarted["id"], "attempt": 2}


def test_a_refused_mcp_call_records_nothing(owner_mcp, owner):
    run = make_run(owner)
    owner_mcp.call("restart_run", {"run_id": run.pk})  # CONFLICT: still queued

    assert not AuditEvent.objects.exists()
