"""The AgentDesk tools over MCP, each scoped to the API key's user."""

import json

import pytest

from agents_app.models import LLMConnection, Run, RunStatus
from tests.support.runs import make_run
from tools_app.models import MCPServer, Tool, ToolSource

pytestmark = pytest.mark.django_db(transaction=True)

AGENTDESK_TOOLS = {
    "submit_task",
    "get_run",
    "list_runs",
    "cancel_run",
    "restart_run",
    "fork_run",
    "replay_run",
    "diff_runs",
    "list_approvals",
    "decide_approval",
    "list_tools",
    "list_conversations",
    "create_conversation",
    "send_message",
    "read_conversation",
    "stop_conversation",
    "list_agents",
    "create_agent",
    "start_agent",
    "stop_agent",
    "restart_agent",
    "agent_status",
    "read_agent_log",
}


def error_of(result) -> dict:
    """The seed 000 error of an isError result (the REST envelope, as text)."""
    assert result.is_error, result
    body = json.loads(result.content[0].text)
    assert body["success"] is False
    return body["error"]


def test_it_lists_the_agentdesk_tools_with_input_and_output_schemas(owner_mcp):
    tools = {tool.name: tool for tool in owner_mcp.list_tools().tools}

    assert set(tools) == AGENTDESK_TOOLS
    submit = tools["submit_task"].input_schema
    assert submit["required"] == ["task"]
    assert set(submit["properties"]) == {
        "task",
        "context",
        "max_tokens",
        "max_tool_calls",
        "connection",
        "planning_connection",
        "verifying_connection",
        "team",
        "close_policy",
    }
    assert tools["list_runs"].input_schema["properties"]["page_size"]["maximum"] == 100
    assert tools["get_run"].input_schema["required"] == ["run_id"]
    assert all(tool.output_schema for tool in tools.values())
    assert tools["get_run"].annotations.read_only_hint is True


def test_submit_task_creates_a_queued_run_owned_by_the_keys_user(owner_mcp, owner):
    result = owner_mcp.call(
        "submit_task", {"task": "Write a haiku", "context": {"tone": "calm"}, "max_tokens": 500}
    )

    assert not result.is_error, result
    submitted = result.structured_content
    run = Run.objects.select_related("task").get(pk=submitted["run_id"])
    assert run.owner == owner
    assert (run.task.text, run.task.context, run.max_tokens) == (
        "Write a haiku",
        {"tone": "calm"},
        500,
    )
    assert submitted["status"] == RunStatus.QUEUED
    assert submitted["links"]["self"] == f"/api/v1/runs/{run.pk}"


def test_submit_task_with_team_is_done_by_a_head_node(owner_mcp, seeded_profiles):
    submitted = owner_mcp.call("submit_task", {"task": "Research it", "team": True})

    assert not submitted.is_error, submitted
    run = Run.objects.select_related("task", "profile").get(
        pk=submitted.structured_content["run_id"]
    )
    assert (run.task.team, run.kind, run.profile.name) == (True, "team", "head_node")
    found = owner_mcp.call("get_run", {"run_id": run.pk}).structured_content
    assert (found["kind"], found["profile"], found["depth"]) == ("team", "head_node", 0)


def test_submit_task_takes_the_close_policy(owner_mcp, seeded_profiles):
    submitted = owner_mcp.call(
        "submit_task", {"task": "Research it", "team": True, "close_policy": "finish"}
    )

    assert not submitted.is_error, submitted
    assert Run.objects.get(pk=submitted.structured_content["run_id"]).close_policy == "finish"
    refused = owner_mcp.call("submit_task", {"task": "Research it", "close_policy": "wait"})
    assert [p["field"] for p in error_of(refused)["details"]["errors"]] == ["close_policy"]
    assert Run.objects.count() == 1


def test_submit_task_names_a_connection_per_phase(owner_mcp):
    LLMConnection.objects.create(name="big", base_url="http://big.example/v1", model="b")

    submitted = owner_mcp.call("submit_task", {"task": "Research it", "planning_connection": "big"})

    assert not submitted.is_error, submitted
    task = Run.objects.select_related("task").get(pk=submitted.structured_content["run_id"]).task
    assert (task.planning_connection.name, task.verifying_connection) == ("big", None)
    refused = owner_mcp.call("submit_task", {"task": "Research it", "verifying_connection": "x"})
    error = error_of(refused)
    assert (error["code"], error["details"]["field"]) == (
        "VALIDATION_ERROR",
        "verifying_connection",
    )


def test_submit_task_refuses_a_team_that_is_no_boolean(owner_mcp):
    result = owner_mcp.call("submit_task", {"task": "Research it", "team": "yes"})

    error = error_of(result)
    assert error["code"] == "VALIDATION_ERROR"
    assert [problem["field"] for problem in error["details"]["errors"]] == ["team"]
    assert not Run.objects.exists()


def test_get_run_shows_the_run_with_its_plans_and_no_result_while_it_is_queued(owner_mcp, owner):
    run = make_run(owner, "Summarise the news")

    found = owner_mcp.call("get_run", {"run_id": run.pk}).structured_content

    assert (found["id"], found["task"], found["status"]) == (run.pk, "Summarise the news", "queued")
    assert found["plans"] == []
    assert found["result"] is None


def test_a_finished_run_comes_with_its_agent_result(owner_mcp, owner):
    run = make_run(owner)

    cancelled = owner_mcp.call("cancel_run", {"run_id": run.pk}).structured_content
    found = owner_mcp.call("get_run", {"run_id": run.pk}).structured_content

    assert cancelled["status"] == found["status"] == "cancelled"
    assert found["result"]["run_id"] == run.pk
    assert found["result"]["success"] is False
    assert found["result"]["final_error"]["code"] == "CANCELLED"


def test_list_runs_shows_only_the_keys_users_runs(owner_mcp, owner, outsider):
    mine = [make_run(owner, "first"), make_run(owner, "second")]
    make_run(outsider, "not yours")
    Run.objects.filter(pk=mine[0].pk).update(status=RunStatus.FAILED)

    everything = owner_mcp.call("list_runs").structured_content
    failed = owner_mcp.call("list_runs", {"status": "failed"}).structured_content

    assert everything["count"] == 2
    assert {r["id"] for r in everything["results"]} == {r.pk for r in mine}
    assert [r["id"] for r in failed["results"]] == [mine[0].pk]


@pytest.mark.parametrize("tool", ["get_run", "cancel_run", "restart_run", "replay_run"])
def test_another_users_run_is_not_found(owner_mcp, outsider, tool):
    theirs = make_run(outsider, "secret plans")
    Run.objects.filter(pk=theirs.pk).update(status=RunStatus.SUCCEEDED)

    result = owner_mcp.call(tool, {"run_id": theirs.pk})

    error = error_of(result)
    assert error["code"] == "NOT_FOUND"
    assert error["message"] == f"Run {theirs.pk} not found"
    assert "secret plans" not in result.content[0].text
    assert Run.objects.filter(task=theirs.task).count() == 1
    assert Run.objects.get(pk=theirs.pk).cancel_requested is False


def test_an_empty_task_is_a_validation_error_and_creates_nothing(owner_mcp):
    error = error_of(owner_mcp.call("submit_task", {"task": "   "}))

    assert (error["code"], error["http_status"]) == ("VALIDATION_ERROR", 400)
    # Refused by the tool's input schema (a blank task does not match it), as over REST.
    assert [problem["field"] for problem in error["details"]["errors"]] == ["task"]
    assert error["trace_id"].startswith("req-")
    assert not Run.objects.exists()


def test_arguments_outside_the_schema_are_a_validation_error(owner_mcp):
    error = error_of(owner_mcp.call("list_runs", {"page_size": 1000}))

    assert error["code"] == "VALIDATION_ERROR"
    assert [e["field"] for e in error["details"]["errors"]] == ["page_size"]


def test_a_missing_argument_is_a_validation_error(owner_mcp):
    error = error_of(owner_mcp.call("get_run", {}))

    assert error["code"] == "VALIDATION_ERROR"
    assert [e["field"] for e in error["details"]["errors"]] == ["run_id"]


def test_cancelling_a_finished_run_is_a_conflict_and_restarting_it_queues_a_new_attempt(
    owner_mcp, owner
):
    run = make_run(owner)
    owner_mcp.call("cancel_run", {"run_id": run.pk})

    conflict = error_of(owner_mcp.call("cancel_run", {"run_id": run.pk}))
    restarted = owner_mcp.call("restart_run", {"run_id": run.pk}).structured_content

    assert conflict["code"] == "CONFLICT"
    new_run = Run.objects.get(pk=restarted["id"])
    assert (new_run.task_id, new_run.attempt, new_run.status) == (run.task_id, 2, "queued")
    assert new_run.owner == owner


def test_restarting_a_run_that_is_still_going_is_a_conflict(owner_mcp, owner):
    run = make_run(owner)

    error = error_of(owner_mcp.call("restart_run", {"run_id": run.pk}))

    assert error["code"] == "CONFLICT"
    assert Run.objects.count() == 1


def test_list_tools_finds_agent_tools_by_capability_and_domain(owner_mcp):
    by_capability = owner_mcp.call("list_tools", {"capability": "file_read"}).structured_content
    by_domain = owner_mcp.call("list_tools", {"domain": "web"}).structured_content

    assert {t["name"] for t in by_capability["tools"]} == {"read_file", "list_files"}
    http_get = by_domain["tools"][0]
    assert http_get["name"] == "http_get"
    assert http_get["schema"]["required"] == ["url"]


def test_list_tools_includes_tools_discovered_on_mcp_servers_with_their_server(owner_mcp):
    server = MCPServer.objects.create(name="git", transport="stdio", command="uvx")
    Tool.objects.create(
        server=server,
        source=ToolSource.MCP,
        name="git.git_log",
        remote_name="git_log",
        description="Show the commit log.",
        input_schema={"type": "object", "properties": {"repo_path": {"type": "string"}}},
        capabilities=["GIT_READ"],
        domain="version_control",
    )

    tools = owner_mcp.call("list_tools", {"capability": "GIT_READ"}).structured_content["tools"]

    assert [t["name"] for t in tools] == ["git.git_log"]
    assert tools[0]["source"] == "mcp"
    assert tools[0]["server"]["name"] == "git"


def test_an_unknown_tool_is_a_tool_not_found_error(owner_mcp):
    error = error_of(owner_mcp.call("approve_everything", {}))

    assert error["code"] == "TOOL_NOT_FOUND"
    assert error["details"]["available_tools"] == sorted(AGENTDESK_TOOLS)


def test_diff_runs_compares_two_of_your_runs_and_not_another_persons(owner_mcp, owner, outsider):
    first, second = make_run(owner), make_run(owner)
    theirs = make_run(outsider, "secret plans")

    same = owner_mcp.call("diff_runs", {"run_id": first.pk, "other_run_id": second.pk})
    refused = owner_mcp.call("diff_runs", {"run_id": first.pk, "other_run_id": theirs.pk})

    assert not same.is_error, same
    assert same.structured_content["first_divergence"] is None
    assert same.structured_content["b"]["id"] == second.pk
    assert error_of(refused)["code"] == "NOT_FOUND"
    assert "secret plans" not in refused.content[0].text


def test_replay_run_queues_a_replay_of_your_ended_run_and_refuses_a_running_one(owner_mcp, owner):
    ended = make_run(owner, "Read the notes")
    Run.objects.filter(pk=ended.pk).update(status=RunStatus.FAILED)
    going = make_run(owner)

    replay = owner_mcp.call("replay_run", {"run_id": ended.pk, "rerun": ["http_get"]})
    refused = error_of(owner_mcp.call("replay_run", {"run_id": going.pk}))

    shape = replay.structured_content
    assert shape["origin"] == {
        "kind": "replay",
        "run_id": ended.pk,
        "after_step": None,
        "plan_version": None,
        "divergences": 0,
        "first_divergence": None,
    }
    new = Run.objects.get(pk=shape["id"])
    assert (new.origin_run_id, new.origin_options) == (ended.pk, {"rerun": ["http_get"]})
    assert (refused["code"], refused["http_status"]) == ("CONFLICT", 409)


@pytest.mark.dialect
def test_a_rerun_name_no_database_stores_is_a_validation_error_over_mcp(owner, owner_mcp):
    """(A lone surrogate never reaches the tool over MCP: test_bad_input.raw_call.)"""
    run = make_run(owner)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.FAILED)

    error = error_of(owner_mcp.call("replay_run", {"run_id": run.pk, "rerun": ["a\x00b"]}))

    assert (error["code"], error["http_status"]) == ("VALIDATION_ERROR", 400)
    assert error["trace_id"]
    assert Run.objects.count() == 1
