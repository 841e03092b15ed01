"""Waiting costs nothing: 200 runs parked on approvals with one single-process worker, which
stays free for other work, and all of them resume after one bulk approval."""

import json
import time

import pytest
from django.conf import settings
from django.test import Client

from agents_app.models import Approval, Run, ToolCall
from agents_app.runs.services import task_submit
from tests.support.approvals import (
    TOOL,
    asking_script,
    audit_accounts_for_everything,
    make_tool_ask,
)
from tests.support.script import plan_reply, step, verdict
from tests.support.waiting import wait_for, wait_for_run

pytestmark = [
    pytest.mark.integration,
    # A load test: it runs against the production database (CI's second pass), where it
    # stands for what a deployment sees; SQLite's single writer would only measure itself.
    pytest.mark.skipif(
        "postgresql" not in settings.DATABASES["default"]["ENGINE"],
        reason="200 waiting runs: PostgreSQL only (set DATABASE_URL)",
    ),
    pytest.mark.dialect,
]

RUNS = 200


def count(ids, status):
    return Run.objects.filter(pk__in=ids, status=status).count()


@pytest.mark.slow(reason="200 runs park, then all resume and finish on one worker")
def test_200_waiting_runs_on_one_worker_all_resume_after_a_bulk_approval(
    llm, start_worker, owner, api_key_for, tmp_path, capsys
):
    make_tool_ask()
    quick = [
        {"match": ["AGENTDESK:PLAN", "quick task"], "replies": [plan_reply(step("answer"))]},
        {"match": ["AGENTDESK:STEP 0", "quick task"], "replies": [{"content": "42"}]},
        {"match": ["AGENTDESK:VERIFY", "quick task"], "replies": [verdict(True, "42")]},
    ]
    llm.script(quick + asking_script(summary=False))
    start_worker(WORKSPACE_ROOT=str(tmp_path / "ws"))

    started = time.monotonic()
    ids = [
        task_submit(owner=owner, interface="api", text=f"Write note {i}").pk for i in range(RUNS)
    ]
    wait_for(lambda: count(ids, "waiting_approval") == RUNS, 300, 0.5, "every run parked")
    parked_in = time.monotonic() - started
    # Parked runs hold no lease, and the one worker process is free for other work.
    assert not Run.objects.filter(pk__in=ids).exclude(lease_owner="").exists()
    other = task_submit(owner=owner, interface="api", text="quick task")
    assert wait_for_run(other.pk, 60).status == "succeeded"
    assert count(ids, "waiting_approval") == RUNS

    before = time.monotonic()
    response = Client().post(
        "/api/v1/approvals/bulk",
        json.dumps({"decision": "approve", "tool": TOOL}),
        content_type="application/json",
        HTTP_AUTHORIZATION=api_key_for(owner).decode(),
    )
    decided_in = time.monotonic() - before
    assert response.status_code == 200, response.content
    body = response.json()
    assert len(body["decided"]) == RUNS and body["refused"] == []
    wait_for(lambda: count(ids, "succeeded") == RUNS, 600, 0.5, "every run succeeded")
    resumed_in = time.monotonic() - before

    assert Approval.objects.filter(run_id__in=ids, status="approved").count() == RUNS
    assert ToolCall.objects.filter(run_id__in=ids, status="succeeded").count() == RUNS
    for run in Run.objects.filter(pk__in=ids):
        audit_accounts_for_everything(run)
    with capsys.disabled():
        print(
            f"\n[approvals] {RUNS} runs parked on one worker in {parked_in:.1f} s; "
            f"bulk approval answered in {decided_in:.2f} s; "
            f"all {RUNS} finished {resumed_in:.1f} s after it"
        )
