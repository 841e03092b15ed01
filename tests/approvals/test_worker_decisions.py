"""The decision matrix end to end: a real worker parks a run on a call, a person decides on
the web page or over REST, and a worker continues the run from its rows. The audit of each
finished run accounts for every tool call and every decision in it."""

import json

import pytest
from django.test import Client

from agents_app.models import Approval, AuditEvent, Run, Step, ToolCall
from agents_app.runs.services import task_submit
from tests.support.approvals import (
    TOOL,
    asking_script,
    audit_accounts_for_everything,
    make_tool_ask,
)
from tests.support.clients import logged_in
from tests.support.waiting import wait_for, wait_for_run

pytestmark = pytest.mark.integration

EDITED = {"path": "edited.txt", "content": "edited by a person"}


def decide_web(owner, approval, decision, arguments=None):
    client = logged_in(owner)
    data = {"decision": decision}
    if arguments is not None:
        data["arguments"] = json.dumps(arguments)
    return client.post(f"/approvals/{approval.pk}/decide/", data, HTTP_HX_REQUEST="true")


def decide_rest(owner, approval, decision, arguments=None, *, api_key_for):
    body = {"decision": decision}
    if arguments is not None:
        body["arguments"] = arguments
    return Client().post(
        f"/api/v1/approvals/{approval.pk}",
        json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=api_key_for(owner).decode(),
    )


def park(llm, owner):
    make_tool_ask()
    llm.script(asking_script())
    run = task_submit(owner=owner, interface="api", text="Write a note")
    wait_for(lambda: Run.objects.get(pk=run.pk).status == "waiting_approval", 60, message="parked")
    return run, Approval.objects.get(run=run)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """The workspaces of the module's runs (run ids are never reused, so each has its own)."""
    return tmp_path_factory.mktemp("workspaces")


@pytest.fixture(scope="module")
def module_worker_env(workspace):
    return {"WORKSPACE_ROOT": str(workspace)}


@pytest.mark.parametrize("via", ["web", "rest"])
@pytest.mark.parametrize("decision", ["approve", "modify", "skip", "cancel"])
@pytest.mark.slow(
    reason="the matrix's first case starts the module's worker; each case parks a run on it and decides it"
)
def test_decision_matrix(via, decision, llm, shared_worker, owner, workspace, api_key_for):
    run, approval = park(llm, owner)
    assert approval.tool == TOOL and approval.status == "pending"
    arguments = EDITED if decision == "modify" else None
    if via == "web":
        response = decide_web(owner, approval, decision, arguments)
    else:
        response = decide_rest(owner, approval, decision, arguments, api_key_for=api_key_for)
    assert response.status_code == 200, response.content
    run = wait_for_run(run.pk, 60)
    approval.refresh_from_db()
    run_dir = workspace / f"run-{run.pk}"
    steps = [s.status for s in Step.objects.filter(run=run).order_by("index")]
    if decision == "approve":
        assert (run.status, approval.status) == ("succeeded", "approved")
        assert (run_dir / "note.txt").read_text() == "hello"
        assert steps == ["completed", "completed"]
    elif decision == "modify":
        assert (run.status, approval.status) == ("succeeded", "modified")
        assert (run_dir / "edited.txt").read_text() == "edited by a person"
        assert not (run_dir / "note.txt").exists()
        assert ToolCall.objects.get(run=run).arguments == EDITED
    elif decision == "skip":
        assert approval.status == "skipped"
        assert steps == ["skipped", "skipped"]
        assert not (run_dir / "note.txt").exists()
    else:
        assert (run.status, approval.status) == ("cancelled", "cancelled")
        assert not (run_dir / "note.txt").exists()
    assert approval.decided_by == owner
    assert approval.decided_via == ("web" if via == "web" else "api")
    audit_accounts_for_everything(run)
    decide = AuditEvent.objects.get(run_id=run.pk, action="approval.decide")
    assert (decide.actor_label, decide.interface, decide.details["decision"]) == (
        "owner",
        approval.decided_via,
        decision,
    )


def test_a_second_decision_is_a_conflict_and_the_call_runs_once(
    llm, shared_worker, owner, api_key_for
):
    run, approval = park(llm, owner)
    first = decide_rest(owner, approval, "approve", api_key_for=api_key_for)
    second = decide_web(owner, approval, "approve")
    third = decide_rest(owner, approval, "cancel", api_key_for=api_key_for)
    assert first.status_code == 200
    assert second.status_code == 409 and third.status_code == 409
    assert third.json()["error"]["code"] == "CONFLICT"
    run = wait_for_run(run.pk, 60)
    assert run.status == "succeeded"
    assert ToolCall.objects.filter(run=run, status="succeeded").count() == 1
    audit_accounts_for_everything(run)


def test_a_waiting_submission_answers_202_as_soon_as_the_run_waits_for_a_person(
    llm, shared_worker, owner, api_key_for
):
    make_tool_ask()
    llm.script(asking_script())
    response = Client().post(
        "/api/v1/agent/task",
        json.dumps({"task": "Write a note", "wait": True, "wait_timeout": 60}),
        content_type="application/json",
        HTTP_AUTHORIZATION=api_key_for(owner).decode(),
    )
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "waiting_approval"
    assert Approval.objects.get(run_id=body["run_id"]).status == "pending"
