"""Past a person's RUNS_QUEUED_PER_USER runs waiting their turn, MCP refuses new work with the
same 429 RATE_LIMITED as REST and the pages (tests/runs/test_admission.py), in its envelope."""

import json

import pytest

from agents_app.models import Run
from tests.runs.test_admission import waiting_rows

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dialect]


def test_submit_task_past_the_queued_limit_is_refused_with_429(owner_mcp, owner, settings):
    # The MCP server's own settings: the default limit.
    waiting_rows(owner, settings.RUNS_QUEUED_PER_USER)
    before = Run.objects.count()

    result = owner_mcp.call("submit_task", {"task": "one more"})

    assert result.is_error
    error = json.loads(result.content[0].text)["error"]
    assert error["code"] == "RATE_LIMITED" and error["http_status"] == 429
    assert error["details"]["max_queued"] == settings.RUNS_QUEUED_PER_USER
    assert error["trace_id"]
    assert Run.objects.count() == before
