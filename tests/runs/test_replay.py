"""A run replayed (issue 36, item 4): its recorded answers instead of a model, its tools run
again in a fresh workspace; where it parts from its source is reported, with the diff of a
request that drifted, and `runs_replay` exits non-zero."""

import json
import uuid

import pytest
from django.core.management import CommandError, call_command

from agents_app.approvals.decisions import approval_decide
from agents_app.core.errors import DomainError
from agents_app.core.secrecy import secret_register
from agents_app.engine import prompts
from agents_app.models import Approval, AuditInterface, ModelExchange, Run, ToolCall
from agents_app.runs.exchanges import model_calls
from agents_app.runs.files import workspace_dir
from agents_app.runs.lease import Lease
from agents_app.runs.replays import run_replay
from agents_app.worker import replaying
from agents_app.worker.execution import execute_run
from agents_app.worker.replaying import execute_replay
from tests.support.replays import (
    NOTES_TASK,
    divergences,
    fetch_script,
    loopback_registry,
    no_model,
    notes_script,
    recorded,
    replan_script,
    replayed,
)
from tests.support.script import plan_reply, step, tool_call, verdict
from tests.support.scripted_provider import ScriptedProvider
from tests.support.site import page_served
from tests.support.tools import make_registry
from tests.support.workspaces import own_workspaces
from tools_app.builtin.files import ReadFileTool
from tools_app.process_registry import get_registry
from tools_app.registry import Tool, ToolResult, ToolSpec

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("own_workspaces")]
__all__ = ["own_workspaces"]


def calls(run: Run) -> list[tuple]:
    return list(
        ToolCall.objects.filter(run=run).order_by("id").values_list("tool", "status", "result")
    )


@pytest.mark.dialect
def test_a_replay_of_a_run_with_file_tools_asks_no_model_and_does_not_diverge(owner, monkeypatch):
    source = recorded(owner, notes_script())
    assert source.status == "succeeded", (source.error_code, source.error_message)
    no_model(monkeypatch)

    replay = replayed(source)

    assert replay.status == "succeeded", (replay.error_code, replay.error_message)
    assert (replay.origin, replay.origin_run_id) == ("replay", source.pk)
    assert divergences(replay) == [] and replay.replay_report == {}
    assert calls(replay) == calls(source)
    # Its tools ran again in its own workspace.
    assert (workspace_dir(replay) / "notes.txt").read_text() == "hello"
    # It recorded the same requests as its source, so it can be replayed in turn.
    asked = [[call.request_sha256 for call in model_calls(run.pk)] for run in (source, replay)]
    assert asked[0] == asked[1] and len(asked[0]) == 6


def test_a_tool_that_returns_something_else_is_a_divergence_at_that_call(owner, monkeypatch):
    source = recorded(owner, notes_script())
    original = ReadFileTool.run

    def shouting(self, arguments, context):
        result = original(self, arguments, context)
        result.content = {**result.content, "content": "HELLO"}
        return result

    monkeypatch.setattr(ReadFileTool, "run", shouting)

    replay = replayed(source)

    found, *then = divergences(replay)
    assert found["kind"] == "result_differs"
    assert (found["step"], found["call"], found["anchor"]) == (2, 1, "step-2-call-1")
    assert found["message"] == "step 2: call 1 read_file result differs"
    # The model is shown that result next, and the verifier too: their requests drift after it.
    assert [(d["kind"], d["step"]) for d in then] == [("request_drift", 2), ("request_drift", None)]
    assert replay.replay_report == {"count": 3, "first": found}


def test_a_changed_prompt_is_request_drift_shown_as_a_diff(owner, monkeypatch):
    source = recorded(owner, notes_script())
    monkeypatch.setattr(prompts, "DATA_RULE", prompts.DATA_RULE + " Be brief.")

    replay = replayed(source)

    found = divergences(replay)
    # Every request drifted (the rule is in each one); the recorded answers were used all
    # the same.
    assert [(d["kind"], d["step"]) for d in found] == [
        ("request_drift", None),
        ("request_drift", 1),
        ("request_drift", 1),
        ("request_drift", 2),
        ("request_drift", 2),
        ("request_drift", None),
    ]
    assert found[0]["message"] == "the planning request differs from the recorded one"
    assert found[1]["message"] == "step 1: the execution request differs from the recorded one"
    diff = found[1]["diff"]
    assert diff.startswith("--- recorded\n+++ replayed\n")
    assert any(line.startswith("+") and "Be brief." in line for line in diff.splitlines())
    assert not any(line.startswith("-") and "Be brief." in line for line in diff.splitlines())
    assert replay.status == "succeeded"


def test_runs_replay_exits_1_on_divergence_0_without_and_2_for_an_unknown_id(
    owner, monkeypatch, capsys
):
    source = recorded(owner, notes_script())
    no_model(monkeypatch)

    call_command("runs_replay", str(source.pk))
    assert capsys.readouterr().out.strip().endswith("succeeded: no divergence")

    monkeypatch.setattr(prompts, "DATA_RULE", prompts.DATA_RULE + " Be brief.")
    with pytest.raises(SystemExit) as exited:
        call_command("runs_replay", str(source.pk))
    assert exited.value.code == 1
    out = capsys.readouterr().out
    assert "6 divergence(s)" in out and "request_drift" in out and "+" in out

    with pytest.raises(SystemExit) as exited:
        call_command("runs_replay", "999999")
    assert exited.value.code == 2

    Run.objects.filter(pk=source.pk).update(recorded=False)
    with pytest.raises(CommandError) as refused:
        call_command("runs_replay", str(source.pk))
    assert refused.value.returncode == 2
    assert "cannot be replayed" in str(refused.value)


def test_a_run_recorded_before_answers_were_kept_or_still_working_is_not_replayed(owner):
    source = recorded(owner, notes_script())
    Run.objects.filter(pk=source.pk).update(recorded=False)
    source.refresh_from_db()
    with pytest.raises(DomainError) as refused:
        replayed(source)
    assert refused.value.code == "CONFLICT"
    assert "cannot be replayed" in refused.value.message

    Run.objects.filter(pk=source.pk).update(recorded=True, status="running")
    with pytest.raises(DomainError) as refused:
        replayed(source)
    assert refused.value.code == "CONFLICT"


def test_a_replanned_run_replays_both_plans_without_divergence(owner, monkeypatch):
    source = recorded(owner, replan_script())
    assert (source.status, source.replans) == ("succeeded", 1), source.error_message
    no_model(monkeypatch)

    replay = replayed(source)

    assert divergences(replay) == []
    assert (replay.status, replay.replans, replay.final_response) == (
        "succeeded",
        1,
        source.final_response,
    )
    assert calls(replay) == calls(source) and len(calls(replay)) == 3


@pytest.mark.dialect  # PostgreSQL keeps a result with its keys reordered
def test_a_network_tool_is_answered_from_the_record_unless_asked_to_run_it_again(
    owner, monkeypatch
):
    registry = loopback_registry()
    with page_served() as url:
        source = recorded(owner, fetch_script(url), "Fetch the page", registry=registry)
        # A fetch from loopback asks: approved, and its replays are approved so too.
        approval = Approval.objects.get(run=source)
        approval_decide(approval_id=approval.pk, decision="approve", actor=owner, interface="api")
        execute_run(source.pk, provider=ScriptedProvider(fetch_script(url)), registry=registry)
    source.refresh_from_db()
    assert source.status == "succeeded", source.error_message
    no_model(monkeypatch)
    # The page is gone: a call made again fails, one answered from the record does not.

    replay = replayed(source, registry=registry)
    again = replayed(source, rerun=["http_get"], registry=registry)

    assert divergences(replay) == [] and calls(replay) == calls(source)
    assert calls(again)[0][1] == "failed"
    first = divergences(again)[0]
    assert (first["kind"], first["message"]) == (
        "result_differs",
        "step 1: call 1 http_get outcome differs",
    )


def test_a_replay_that_runs_out_of_recorded_answers_fails_saying_where(owner):
    source = recorded(owner, notes_script())
    ModelExchange.objects.filter(run=source, phase="verification").delete()

    replay = replayed(source)

    (found,) = divergences(replay)
    assert found["kind"] == "answers_ran_out"
    assert found["message"] == (
        "the source made no such verification call (no recorded answer left)"
    )
    assert (replay.status, replay.error_code) == ("failed", "REPLAY_DIVERGED")


class Lookup(Tool):
    """A tool as an MCP server's tools are registered (source mcp), counting its calls."""

    spec = ToolSpec(
        name="lookup",
        description="Looks a word up.",
        input_schema={
            "type": "object",
            "properties": {"word": {"type": "string"}},
            "required": ["word"],
            "additionalProperties": False,
        },
        capabilities=frozenset({"LOOKUP"}),
        domain="words",
        source="mcp",
    )

    def __init__(self):
        self.calls = 0

    def run(self, arguments, context):
        self.calls += 1
        return ToolResult(ok=True, content={"meaning": f"{arguments['word']} #{self.calls}"})


def test_an_mcp_tool_is_answered_from_the_record_unless_asked_to_run_it_again(owner):
    lookup = Lookup()
    registry = make_registry(lookup)
    script = [
        {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("look it up", ["lookup"]))]},
        {
            "match": "AGENTDESK:STEP 0",
            "replies": [tool_call("lookup", word="replay"), {"content": "looked up"}],
        },
        {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "found", evidence=[1])]},
    ]
    source = recorded(owner, script, "Look up replay", registry=registry)
    assert (source.status, lookup.calls) == ("succeeded", 1), source.error_message

    replay = replayed(source, registry=registry)
    assert lookup.calls == 1  # its server was not asked
    assert divergences(replay) == [] and calls(replay) == calls(source)

    again = replayed(source, rerun=["lookup"], registry=registry)
    assert lookup.calls == 2  # asked again: it answers otherwise now
    first = divergences(again)[0]
    assert first["message"] == "step 1: call 1 lookup result differs"


@pytest.mark.dialect  # PostgreSQL keeps a call's arguments with their keys reordered
def test_arguments_the_model_sent_in_any_order_replay_without_drift(owner, monkeypatch):
    script = notes_script()
    script[1]["replies"][0] = tool_call("write_file", content="hello", path="notes.txt")
    source = recorded(owner, script)
    assert source.status == "succeeded", source.error_message
    no_model(monkeypatch)

    replay = replayed(source)

    assert divergences(replay) == []


def test_a_replay_another_worker_holds_is_waited_for_not_given_up(owner, monkeypatch):
    """A Celery worker took a run of the replay's tree: execute_replay waits for its lease to
    be let go and goes on, instead of spending its rounds at once and reporting an outcome
    its source did not have."""
    source = recorded(owner, notes_script())
    no_model(monkeypatch)
    replay = run_replay(run=source, actor=owner, interface=AuditInterface.API, admit=False)
    held = Lease.claim(replay.pk, 60)
    looks = []

    def pause(seconds):
        looks.append(seconds)
        if len(looks) == 3:
            held.release()

    monkeypatch.setattr(replaying, "_pause", pause)

    done = execute_replay(replay.pk, registry=get_registry())

    assert (done.status, divergences(done)) == ("succeeded", [])
    assert looks == [replaying.REPLAY_POLL_SECONDS] * 3


def test_a_secret_in_a_drifted_request_is_neither_shown_nor_a_difference(owner, monkeypatch):
    """The recorded requests were redacted when written: the drift diff compares them with
    the replay's request redacted too (a line holding a secret is no change), and what the
    replay keeps (its report, its events) holds no secret."""
    secret = "replay-" + uuid.uuid4().hex[:12]
    secret_register(secret)
    source = recorded(owner, notes_script(), f"{NOTES_TASK}; keep {secret} out of it")
    monkeypatch.setattr(prompts, "DATA_RULE", prompts.DATA_RULE + " Be brief.")

    replay = replayed(source)

    found = divergences(replay)
    assert len(found) == 6 and all(d["kind"] == "request_drift" for d in found)
    added = [
        line
        for d in found
        for line in d["diff"].splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
    # Only the rule changed: no line (the task's) differs by a secret.
    assert added and all("Be brief." in line for line in added), added
    assert secret not in json.dumps(replay.replay_report)
    assert secret not in json.dumps(found)


def test_a_replay_s_report_is_redacted_as_its_events_are(owner, monkeypatch):
    """A secret known only since the source was recorded is in the recorded request's text:
    the report keeps its diff redacted, as the divergence's event does."""
    secret = "later-" + uuid.uuid4().hex[:12]
    monkeypatch.setattr(prompts, "DATA_RULE", prompts.DATA_RULE + f" Never say {secret}.")
    source = recorded(owner, notes_script())
    secret_register(secret)
    monkeypatch.setattr(prompts, "DATA_RULE", prompts.DATA_RULE + " Be brief.")

    replay = replayed(source)

    assert replay.replay_report["first"]["kind"] == "request_drift"
    assert "Never say [redacted]" in replay.replay_report["first"]["diff"]
    assert secret not in json.dumps(replay.replay_report)
    assert secret not in json.dumps(divergences(replay))


class TokenTool(Tool):
    """Reads a token: a secret in its result (which the record keeps redacted)."""

    spec = ToolSpec(
        name="read_token",
        description="Read the deploy token.",
        input_schema={"type": "object", "properties": {}},
        capabilities=frozenset({"READ"}),
        domain="testing",
    )

    def __init__(self, token: str):
        self.token = token

    def run(self, arguments, context):
        return ToolResult(ok=True, content={"token": self.token, "scope": "deploy"})


def test_a_tool_result_holding_a_secret_is_compared_as_it_was_recorded(owner, monkeypatch):
    # The record keeps the result redacted, and the registry gives the replay the result it
    # ran redacted the same way (tools_app.registry): the same result again is no difference
    # (compared raw, every call that read a secret would diverge), another one is.
    token = "tok-" + uuid.uuid4().hex[:12]
    secret_register(token)
    script = [
        {
            "match": "AGENTDESK:PLAN",
            "replies": [plan_reply(step("read the token", ["read_token"]))],
        },
        {
            "match": "AGENTDESK:STEP 0",
            "replies": [tool_call("read_token"), {"content": "the token is read"}],
        },
        {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "read", evidence=[1])]},
    ]
    source = recorded(
        owner, script, "Read the deploy token", registry=make_registry(TokenTool(token))
    )
    assert source.status == "succeeded", (source.error_code, source.error_message)
    assert token not in json.dumps(calls(source))
    no_model(monkeypatch)

    replay = replayed(source, registry=make_registry(TokenTool(token)))

    assert divergences(replay) == [] and replay.status == "succeeded"
    # A token that changed is a difference all the same.
    again = replayed(source, registry=make_registry(TokenTool("tok-other")))
    assert [d["kind"] for d in divergences(again)][:1] == ["result_differs"]
