"""A run planned and executed by a real worker with tools from real MCP servers."""

import json
import subprocess

import pytest

from agents_app.models import Step, ToolCall
from agents_app.tasks import execute_run
from tests.support.mcp_servers import filesystem_js, node, python_server
from tests.support.runs import allow_every_call, make_run
from tests.support.script import plan_reply, step, verdict
from tests.support.waiting import wait_for_run
from tools_app.models import MCPServer

pytestmark = pytest.mark.integration


def git_repo(path):
    path.mkdir()
    for command in (
        ["git", "init", "-q"],
        [
            "git",
            "-c",
            "user.email=t@example.com",
            "-c",
            "user.name=t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "start",
        ],
    ):
        subprocess.run(command, cwd=path, check=True)
    return path


def tool_call(name, arguments):
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


@pytest.mark.slow(reason="a worker starts with the reference filesystem and git MCP servers")
def test_a_run_uses_filesystem_and_git_tools_through_the_planner(
    llm, start_worker, owner, tmp_path
):
    allow_every_call(owner)  # MCP tools act outside the workspace: moderate, they would ask
    repo = git_repo(tmp_path / "repo")
    MCPServer.objects.create(
        name="files", transport="stdio", command=node(), args=[filesystem_js(), str(repo)]
    )
    MCPServer.objects.create(
        name="git",
        transport="stdio",
        command=python_server("mcp-server-git"),
        args=["--repository", str(repo)],
    )
    notes = str(repo / "notes.txt")
    llm.script(
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [
                    plan_reply(
                        step("write the notes", ["files.write_file"]),
                        step("see what git says", ["git.git_status"], [0]),
                    )
                ],
            },
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [
                    tool_call(
                        "files__write_file", {"path": notes, "content": "remember the milk\n"}
                    ),
                    {"content": "notes.txt written"},
                ],
            },
            {
                "match": "AGENTDESK:STEP 1",
                "replies": [
                    tool_call("git__git_status", {"repo_path": str(repo)}),
                    {"content": "notes.txt is untracked"},
                ],
            },
            {
                "match": "AGENTDESK:VERIFY",
                "replies": [verdict(True, "notes written, git sees them", evidence=[1, 2])],
            },
        ]
    )
    start_worker()
    # The notes go to the repository, not the run's workspace: the task does not name the file
    # (a named file must be in the workspace for the run to succeed).
    run = make_run(owner, "Write the notes file in the repo and check git status")
    execute_run.delay(run.pk)
    run = wait_for_run(run.pk, timeout=120)

    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert (repo / "notes.txt").read_text() == "remember the milk\n"
    calls = {c.tool: c for c in ToolCall.objects.filter(run=run)}
    assert set(calls) == {"files.write_file", "git.git_status"}
    assert all(c.status == "succeeded" for c in calls.values())
    assert "notes.txt" in json.dumps(calls["git.git_status"].result)
    plan_prompt = next(b for b in llm.requests if "AGENTDESK:PLAN" in json.dumps(b["messages"]))
    assert "files.write_file" in plan_prompt["messages"][1]["content"]  # the tool list is data
    assert [s.status for s in Step.objects.filter(run=run)] == ["completed", "completed"]
    assert MCPServer.objects.get(name="files").status == "active"
