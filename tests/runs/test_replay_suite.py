"""Issue 36, item 4's done-when: varied recorded runs (files, approvals approved and denied, a
replan, a team with children, a Stop, the fast path, a tool that failed, a run that failed, a
chat answer with tool calls) are
replayed by `runs_replay` with no model request and no divergence; a tool that behaves
otherwise is a divergence at its call and a prompt changed is request drift, and runs_replay
exits 1."""

import pytest
from django.core.management import call_command

from agents_app.conversations.services import conversation_create, message_post
from agents_app.engine import prompts
from agents_app.models import Approval, Run
from agents_app.worker.execution import execute_run
from tests.support.replays import (
    decided,
    no_model,
    notes_script,
    recorded,
    recorded_team,
    replan_script,
    stopped,
)
from tests.support.runs import make_run
from tests.support.script import plan_reply, step, tool_call, verdict
from tests.support.scripted_provider import ScriptedProvider
from tests.support.workspaces import own_workspaces
from tools_app.builtin.files import ReadFileTool
from tools_app.models import Tool
from tools_app.process_registry import get_registry

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("own_workspaces")]
__all__ = ["own_workspaces"]


def fast(owner) -> Run:
    run = make_run(owner, "List the files", fast_path=True)
    script = [
        {
            "match": "AGENTDESK:DIRECT",
            "replies": [tool_call("list_files"), {"content": "the workspace is empty"}],
        }
    ]
    execute_run(run.pk, provider=ScriptedProvider(script), registry=get_registry())
    run.refresh_from_db()
    return run


def missing(owner) -> Run:
    """A read of a file that is not there: the tool fails, the model says so."""
    script = [
        {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("read gone.txt", ["read_file"]))]},
        {
            "match": "AGENTDESK:STEP 0",
            "replies": [
                tool_call("read_file", path="gone.txt"),
                {"content": "there is no gone.txt"},
            ],
        },
        {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "no such file", evidence=[1])]},
    ]
    return recorded(owner, script, "Read gone.txt")


def chat_answer(owner) -> Run:
    """A chat's second answer, which lists the files before it answers."""
    provider = ScriptedProvider(
        [
            {
                "match": "AGENTDESK:CHAT",
                "replies": [
                    {"content": "Hello."},
                    tool_call("list_files"),
                    {"content": "The workspace is empty."},
                ],
            }
        ]
    )
    chat = conversation_create(owner=owner, interface="api")
    for text in ("Hi there", "What files are there?"):
        _, answer = message_post(conversation=chat, actor=owner, interface="api", text=text)
        execute_run(answer.pk, provider=provider, registry=get_registry())
    answer.refresh_from_db()
    return answer


def failed(owner) -> Run:
    script = notes_script()
    script[-1] = {"match": "AGENTDESK:VERIFY", "replies": [verdict(False, "it is not loud")]}
    return recorded(owner, script)


def test_varied_runs_replay_without_a_model_or_a_divergence_and_changes_are_caught(
    owner, llm, seeded_profiles, queued_runs, settings, monkeypatch, capsys
):
    settings.AGENT_FAST_PATH_MAX_CHARS = 500
    runs = {
        "files": recorded(owner, notes_script()),
        "replan": recorded(owner, replan_script()),
        "team": recorded_team(owner, get_registry()),
        "stop": stopped(owner),
        "fast path": fast(owner),
        "missing file": missing(owner),
        "failed": failed(owner),
        "chat answer": chat_answer(owner),
    }
    # Recorded last: write_file asks from here on (staff's setting, which a replay meets too).
    asked = {"approved": decided(owner, "approve"), "denied": decided(owner, "deny")}
    assert {name: run.status for name, run in {**runs, **asked}.items()} == {
        "files": "succeeded",
        "replan": "succeeded",
        "team": "succeeded",
        "stop": "cancelled",
        "fast path": "succeeded",
        "missing file": runs["missing file"].status,
        "failed": "failed",
        "chat answer": "succeeded",
        "approved": "succeeded",
        "denied": asked["denied"].status,  # as the script's verifier judged a denied write
    }
    assert asked["denied"].is_terminal
    no_model(monkeypatch)
    before = len(llm.requests)

    call_command("runs_replay", *(str(run.pk) for run in asked.values()))
    Tool.objects.filter(name="write_file").delete()  # as when the others were recorded
    call_command("runs_replay", *(str(run.pk) for run in runs.values()))

    lines = capsys.readouterr().out.splitlines()
    replayed = {**asked, **runs}
    assert len(lines) == len(replayed), lines
    for line, (name, run) in zip(lines, replayed.items(), strict=True):
        assert line.startswith(f"run {run.pk}: replay "), (name, line)
        assert line.endswith(f"{run.status}: no divergence"), (name, line)
    approvals = Approval.objects.filter(run__origin_run__in=asked.values()).order_by("pk")
    assert [(a.status, a.decided_via) for a in approvals] == [
        ("approved", "worker"),
        ("denied", "worker"),
    ]

    original = ReadFileTool.run

    def other(self, arguments, context):
        result = original(self, arguments, context)
        result.content = {**result.content, "content": "bye"}
        return result

    monkeypatch.setattr(ReadFileTool, "run", other)
    with pytest.raises(SystemExit) as exited:
        call_command("runs_replay", str(runs["files"].pk))
    assert exited.value.code == 1
    assert "result_differs: step 2: call 1 read_file result differs" in capsys.readouterr().out

    monkeypatch.setattr(ReadFileTool, "run", original)
    monkeypatch.setattr(prompts, "DATA_RULE", prompts.DATA_RULE + " Be brief.")
    with pytest.raises(SystemExit) as exited:
        call_command("runs_replay", str(runs["fast path"].pk))
    assert exited.value.code == 1
    said = capsys.readouterr().out
    assert "request_drift" in said and "+" in said and "Be brief." in said
    # No model was asked anywhere: not one request reached the scripted server.
    assert len(llm.requests) == before
