"""The worker's LLM and tool calls in the audit log, committed with the rows they describe."""

import hashlib
import json

import pytest

from agents_app.core.audit import arguments_sha256
from agents_app.engine.llm import Usage
from agents_app.models import AuditEvent, Run, ToolCall
from agents_app.runs.lease import Lease
from agents_app.runs.writer import LeaseLost
from agents_app.worker.execution import execute_run
from agents_app.worker.hooks import DatabaseHooks
from tests.support.runs import make_run
from tests.support.script import plan_reply, step, tool_call, verdict
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import BrokenTool, EchoTool, FinishTool, make_registry


def canonical_sha256(arguments) -> str:
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def run_with(owner, rules):
    run = make_run(owner)
    provider = ScriptedProvider(rules)
    execute_run(
        run.pk, provider=provider, registry=make_registry(EchoTool(), BrokenTool(), FinishTool())
    )
    run.refresh_from_db()
    return run, provider


A_RUN_WITH_EVERY_KIND_OF_TOOL_CALL = [
    {
        "match": "AGENTDESK:PLAN",
        "replies": [
            {
                **plan_reply(
                    step("echo", ["echo"]), step("break", ["broken"]), step("bad args", ["echo"])
                ),
                "usage": {"prompt_tokens": 120, "completion_tokens": 30},
            }
        ],
    },
    {
        "match": "AGENTDESK:STEP 0",
        "replies": [
            {
                "tool_calls": [
                    {"name": "echo", "arguments": {"text": "grüße"}},
                    {"name": "echo", "arguments": {"text": "again"}},
                ],
                "usage": {"prompt_tokens": 40, "completion_tokens": 7},
            },
            {"content": "echoed", "usage": {"prompt_tokens": 55, "completion_tokens": 3}},
        ],
    },
    {"match": "AGENTDESK:STEP 1", "replies": [tool_call("broken")]},
    {"match": "AGENTDESK:STEP 2", "replies": [tool_call("echo", text=5)]},
    {"match": "AGENTDESK:VERIFY", "replies": [verdict(False, replan=False)]},
]


@pytest.mark.django_db(transaction=True)
def test_the_audit_log_of_a_finished_run_has_one_llm_call_per_request_with_its_tokens(owner):
    run, provider = run_with(owner, A_RUN_WITH_EVERY_KIND_OF_TOOL_CALL)

    calls = list(AuditEvent.objects.filter(run_id=run.pk, action="llm.call").order_by("pk"))

    assert run.is_terminal
    assert len(calls) == len(provider.requests)
    assert {(c.interface, c.actor_id, c.actor_label, c.target) for c in calls} == {
        ("worker", None, "worker", "scripted")
    }
    assert sum(c.details["prompt_tokens"] for c in calls) == run.prompt_tokens
    assert sum(c.details["completion_tokens"] for c in calls) == run.completion_tokens
    assert calls[0].details == {
        "model": "scripted",
        "prompt_tokens": 120,
        "completion_tokens": 30,
        "step_index": None,
    }
    assert [c.details["step_index"] for c in calls[1:3]] == [0, 0]


@pytest.mark.django_db(transaction=True)
def test_the_audit_log_of_a_finished_run_accounts_for_every_tool_call(owner):
    run, _ = run_with(owner, A_RUN_WITH_EVERY_KIND_OF_TOOL_CALL)

    tool_calls = list(ToolCall.objects.filter(run=run).order_by("pk"))
    audited = {
        event.details["tool_call_id"]: event
        for event in AuditEvent.objects.filter(run_id=run.pk, action="tool.call")
    }

    assert len(tool_calls) == 4
    assert AuditEvent.objects.filter(run_id=run.pk, action="tool.call").count() == len(tool_calls)
    for call in tool_calls:
        event = audited[call.pk]
        assert (event.interface, event.actor_id, event.actor_label) == ("worker", None, "worker")
        assert event.target == call.tool
        assert event.details["arguments_sha256"] == canonical_sha256(call.arguments)
        assert event.details["outcome"] == call.status
        assert event.details["duration_ms"] == call.duration_ms
        assert event.details["step_index"] == call.step.index
    assert [audited[c.pk].details["error_code"] for c in tool_calls] == [
        "",
        "",
        "TOOL_FAILED",
        "INVALID_ARGUMENTS",
    ]
    assert [c.status for c in tool_calls] == ["succeeded", "succeeded", "failed", "failed"]


def test_arguments_in_another_key_order_hash_alike_as_canonical_json():
    assert arguments_sha256({"a": 1, "b": "ü"}) == arguments_sha256({"b": "ü", "a": 1})
    assert arguments_sha256({"a": 1, "b": "ü"}) == canonical_sha256({"a": 1, "b": "ü"})
    assert arguments_sha256({"a": 1}) != arguments_sha256({"a": "1"})


def test_a_worker_that_lost_its_lease_records_no_llm_call(owner):
    run = make_run(owner)
    Run.objects.filter(pk=run.pk).update(lease_owner="someone-else")
    hooks = DatabaseHooks(run, Lease(run.pk, "mine", 30))

    hooks.on_llm_usage(Usage(prompt_tokens=10, completion_tokens=5), "scripted")
    with pytest.raises(LeaseLost), hooks.commit():  # the call is written with the next commit
        pass

    assert not AuditEvent.objects.filter(action="llm.call").exists()
    assert Run.objects.get(pk=run.pk).prompt_tokens == 0


def test_an_llm_call_is_recorded_with_the_run_s_token_update(owner):
    run = make_run(owner)
    Run.objects.filter(pk=run.pk).update(lease_owner="mine")
    hooks = DatabaseHooks(run, Lease(run.pk, "mine", 30))

    hooks.on_llm_usage(Usage(prompt_tokens=10, completion_tokens=5), "gpt-test")
    assert not AuditEvent.objects.filter(action="llm.call").exists()  # until the next commit
    with hooks.commit():
        pass

    run.refresh_from_db()
    event = AuditEvent.objects.get(action="llm.call")
    assert (run.prompt_tokens, run.completion_tokens) == (10, 5)
    assert (event.run_id, event.target) == (run.pk, "gpt-test")
    assert event.details == {
        "model": "gpt-test",
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "step_index": None,
    }
