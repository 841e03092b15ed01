"""The approvals REST API: a task's approval options and runs waiting for approval."""

from datetime import timedelta

import pytest

from agents_app.core.errors import DomainError
from agents_app.models import Approval, Run, Task
from agents_app.runs.services import task_submit
from tests.support.api import assert_error, submit
from tests.support.approvals import SCRIPT, drive, parked
from tests.support.runs import make_run
from tests.support.scripted_provider import ScriptedProvider

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_task_takes_its_approval_options(owner, owner_api, llm_configured, send, registry):
    response = submit(owner_api, approve_plan=True, approval_timeout=30, approval_on_timeout="skip")

    assert response.status_code == 202
    task = Task.objects.get()
    assert (task.approve_plan, task.approval_timeout, task.approval_on_timeout) == (
        True,
        30,
        "skip",
    )
    run = Run.objects.get(pk=response.json()["run_id"])
    drive(run, ScriptedProvider(SCRIPT), registry)
    assert run.status == "waiting_approval" and send.calls == []
    approval = Approval.objects.get(run=run)
    assert (approval.kind, approval.on_timeout) == ("plan", "skip")
    assert (
        timedelta(seconds=29) < approval.expires_at - approval.created_at <= timedelta(seconds=31)
    )


def test_a_task_without_approval_options_keeps_the_defaults(owner_api, llm_configured):
    owner_client = owner_api
    assert submit(owner_client).status_code == 202

    task = Task.objects.get()
    assert (task.approve_plan, task.approval_timeout, task.approval_on_timeout) == (
        False,
        None,
        "",
    )


@pytest.mark.parametrize(
    "options",
    [
        {"approval_timeout": 0},
        {"approval_timeout": -5},
        {"approval_timeout": 1.5},
        {"approval_timeout": "soon"},
        {"approval_timeout": 2**31},
        {"approval_on_timeout": "explode"},
        {"approval_on_timeout": "approve"},
        {"approve_plan": "maybe"},
    ],
)
def test_a_task_with_bad_approval_options_is_refused(owner_api, llm_configured, options):
    error = assert_error(submit(owner_api, **options), 400, "VALIDATION_ERROR")

    assert error["details"]["errors"][0]["field"] == next(iter(options))
    assert not Task.objects.exists()


@pytest.mark.parametrize(
    "options", [{"approval_timeout": 0}, {"approval_timeout": True}, {"approval_on_timeout": "x"}]
)
def test_task_submit_refuses_bad_approval_options_from_any_front_end(
    owner, llm_configured, options
):
    with pytest.raises(DomainError) as refused:
        task_submit(owner=owner, interface="mcp", text="Do it", **options)

    assert refused.value.code == "VALIDATION_ERROR"
    assert refused.value.details["field"] == next(iter(options))
    assert not Task.objects.exists()


def test_runs_waiting_for_approval_are_listed_by_that_status(owner, owner_api, registry):
    run, _, _ = parked(owner, registry)
    make_run(owner)

    body = owner_api.get("/api/v1/runs?status=waiting_approval").json()

    assert [r["id"] for r in body["results"]] == [run.pk]
    assert body["results"][0]["status"] == "waiting_approval"
