"""Phase models (seed 004, a large planner and small executors): a task names a connection for
planning and one for verifying besides the one that executes its steps. Each phase's requests
go to its own connection's server (two scripted servers, counted), the run's budget counts
them all, and the run page says which model did what. The run executes in the test's process
with the real OpenAI-wire provider; REST and the task form name the phases' connections."""

import json

import pytest

from agents_app.models import AgentProfile, LLMConnection, Run, Task
from agents_app.worker.execution import execute_run
from tests.support.api import assert_error
from tests.support.llm_server import ScriptedLLMServer
from tests.support.runs import make_run
from tests.support.script import DEFAULT_USAGE, plan_reply, step, verdict
from tests.support.teams import start_team
from tests.support.workspaces import own_workspaces

__all__ = ["own_workspaces"]

PLAN = {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("Say hello"))]}
STEP = {"match": "AGENTDESK:STEP", "replies": [{"content": "hello"}]}
VERIFY = {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "hello")]}
PER_REQUEST = DEFAULT_USAGE["prompt_tokens"] + DEFAULT_USAGE["completion_tokens"]


@pytest.fixture
def big_llm():
    """A second scripted OpenAI-wire server, with an address of its own: the large model."""
    with ScriptedLLMServer() as server:
        yield server


def markers(server: ScriptedLLMServer) -> list[str]:
    """Which phase each request the server got was for, in order."""
    found = []
    for body in server.requests:
        text = json.dumps(body["messages"])
        found.append(
            next(m for m in ("AGENTDESK:PLAN", "AGENTDESK:STEP", "AGENTDESK:VERIFY") if m in text)
        )
    return found


def planned_run(owner, **phases):
    run = make_run(owner, "Say hello", fast_path=False)
    Task.objects.filter(pk=run.task_id).update(**phases)
    return run


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("own_workspaces")
def test_a_planning_model_plans_and_verifies_while_the_executing_model_does_the_steps(
    llm, big_llm, owner, owner_session
):
    llm.script([STEP])
    big_llm.script([PLAN, VERIFY])
    big = LLMConnection.objects.create(name="big", base_url=big_llm.base_url, model="big-model")
    run = planned_run(owner, planning_connection=big, verifying_connection=big)

    execute_run(run.pk)

    run.refresh_from_db()
    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert markers(big_llm) == ["AGENTDESK:PLAN", "AGENTDESK:VERIFY"]
    assert {body["model"] for body in big_llm.requests} == {"big-model"}
    assert markers(llm) == ["AGENTDESK:STEP"]
    assert {body["model"] for body in llm.requests} == {"scripted"}
    # The budget counts every phase's tokens, whichever server answered.
    assert run.prompt_tokens + run.completion_tokens == 3 * PER_REQUEST
    assert run.phase_models == {
        "planning": "big-model",
        "executing": "scripted",
        "verifying": "big-model",
    }
    page = owner_session.get(f"/runs/{run.pk}/").content.decode()
    assert "planning big-model · executing scripted · verifying big-model" in page


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("own_workspaces")
def test_a_verifying_model_alone_judges_and_the_run_s_model_plans_and_executes(llm, big_llm, owner):
    llm.script([PLAN, STEP])
    big_llm.script([VERIFY])
    judge = LLMConnection.objects.create(name="judge", base_url=big_llm.base_url, model="judge")
    run = planned_run(owner, verifying_connection=judge)

    execute_run(run.pk)

    run.refresh_from_db()
    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert markers(big_llm) == ["AGENTDESK:VERIFY"]
    assert markers(llm) == ["AGENTDESK:PLAN", "AGENTDESK:STEP"]
    assert run.phase_models["verifying"] == "judge"


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("own_workspaces")
def test_a_run_past_its_budget_on_the_planning_model_s_tokens_fails_there(llm, big_llm, owner):
    llm.script([STEP])
    big_llm.script([PLAN, VERIFY])
    big = LLMConnection.objects.create(name="big", base_url=big_llm.base_url, model="big-model")
    run = make_run(owner, "Say hello", fast_path=False, max_tokens=PER_REQUEST - 1)
    Task.objects.filter(pk=run.task_id).update(planning_connection=big)

    execute_run(run.pk)

    run.refresh_from_db()
    assert (run.status, run.error_code) == ("failed", "BUDGET_EXCEEDED")
    assert markers(big_llm) == ["AGENTDESK:PLAN"]
    assert llm.requests == []


@pytest.mark.parametrize("field", ["planning_connection", "verifying_connection"])
def test_an_unknown_connection_for_a_phase_is_a_validation_error_naming_its_field(
    owner_api, llm_configured, field
):
    response = owner_api.post(
        "/api/v1/agent/task",
        json.dumps({"task": "Say hello", field: "nope"}),
        content_type="application/json",
    )

    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert error["details"]["field"] == field
    assert not Task.objects.exists()


def test_a_task_submitted_over_rest_keeps_its_phases_connections(owner_api, llm_configured):
    big = LLMConnection.objects.create(name="big", base_url="http://big.example/v1", model="b")

    response = owner_api.post(
        "/api/v1/agent/task",
        json.dumps(
            {"task": "Say hello", "planning_connection": "big", "verifying_connection": big.pk}
        ),
        content_type="application/json",
    )

    assert response.status_code == 202, response.content
    task = Run.objects.get(pk=response.json()["run_id"]).task
    assert (task.planning_connection, task.verifying_connection) == (big, big)
    assert task.connection.name == "env"


def test_the_task_form_names_a_planning_model(owner_session, llm_configured):
    big = LLMConnection.objects.create(name="big", base_url="http://big.example/v1", model="b")

    response = owner_session.post(
        "/tasks/new/", {"task": "Say hello", "planning_connection": str(big.pk)}
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    task = Task.objects.get()
    assert (task.planning_connection, task.verifying_connection) == (big, None)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("queued_runs")
def test_a_profile_s_phase_connections_go_to_its_child_s_task(owner, llm_configured):
    big = LLMConnection.objects.create(name="big", base_url="http://big.example/v1", model="b")
    profile = AgentProfile.objects.create(
        name="reviewer", persona="You review.", planning_connection=big, verifying_connection=big
    )

    _, (child, micro) = start_team(owner, [("Review it", profile), ("Check one thing", None)])

    assert (child.task.planning_connection, child.task.verifying_connection) == (big, big)
    # A micro agent takes its parent task's, which names none here.
    assert (micro.task.planning_connection, micro.task.verifying_connection) == (None, None)


def test_staff_set_a_profile_s_phase_connections_in_the_admin(superuser_admin, llm_configured):
    big = LLMConnection.objects.create(name="big", base_url="http://big.example/v1", model="b")
    add = "/admin/agents_app/agentprofile/add/"

    response = superuser_admin.post(
        add,
        {
            "name": "planner",
            "role": "custom",
            "persona": "You plan.",
            "temperature": "0.4",
            "concurrency_limit": "1",
            "planning_connection": str(big.pk),
            "verifying_connection": "",
        },
    )

    assert response.status_code == 302, response.content.decode()[:3000]
    planner = AgentProfile.objects.get(name="planner")
    assert (planner.planning_connection, planner.verifying_connection) == (big, None)
