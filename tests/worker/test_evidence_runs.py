"""No success without evidence, through a real worker and the scripted LLM server: a step that
had to use a tool, a file the task names, a verdict that must cite the run's calls, and tool
arguments that only repeat their description."""

import json

import pytest

from agents_app.models import RunEvent, Step, ToolCall
from agents_app.tasks import execute_run
from tests.support.runs import make_run
from tests.support.script import plan_reply, step, tool_call, verdict
from tests.support.waiting import wait_for_run

pytestmark = pytest.mark.integration

NUDGE = "This step must use one of its tools (list_files); call one now."


def requests_for(llm, marker):
    return [b for b in llm.requests if marker in json.dumps(b["messages"])]


def error_event(run):
    return RunEvent.objects.get(run=run, type="error").payload


def execute(owner, text):
    run = make_run(owner, text)
    execute_run.delay(run.pk)
    return wait_for_run(run.pk)


def write_hello_script(path):
    return [
        {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("write it", ["write_file"]))]},
        {
            "match": "AGENTDESK:STEP 0",
            "replies": [
                tool_call("write_file", path=path, content="hello\n"),
                {"content": "wrote hello.txt"},
            ],
        },
        {
            "match": "AGENTDESK:VERIFY",
            "replies": [verdict(True, "hello.txt says hello", evidence=[1])],
        },
    ]


def test_a_task_naming_a_file_fails_without_it_although_the_verifier_said_complete(
    llm, shared_worker, owner
):
    llm.script(write_hello_script("greeting.txt"))  # the wrong file
    run = execute(owner, "write hello to hello.txt")
    assert (run.status, run.error_code) == ("failed", "EVIDENCE_MISSING")
    assert run.error_message == (
        "The task asks for hello.txt, but the workspace has no such file — the files check failed"
    )
    assert run.final_response == ""
    details = error_event(run)["details"]
    assert details == {"check": "files", "missing": ["hello.txt"], "verifier": "scripted"}
    verification = RunEvent.objects.get(run=run, type="verification").payload
    assert verification["task_complete"] is True and verification["evidence"] == [1]


def test_the_same_task_with_the_file_written_succeeds(llm, shared_worker, owner, settings):
    llm.script(write_hello_script("hello.txt"))
    run = execute(owner, "write hello to hello.txt")
    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert (settings.WORKSPACE_ROOT / f"run-{run.pk}" / "hello.txt").read_text() == "hello\n"
    assert run.final_response == "hello.txt says hello"


def test_a_finish_task_repeating_its_description_is_refused(llm, shared_worker, owner):
    copied = "The final answer or a summary of what was done."
    llm.script(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("answer", ["finish_task"]))]},
            {"match": "AGENTDESK:STEP 0", "replies": [tool_call("finish_task", result=copied)]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(False)]},
        ]
    )
    run = execute(owner, "2+2, answer with finish_task")
    assert run.status == "failed" and run.final_response == ""
    step0 = Step.objects.get(run=run)
    assert step0.status == "failed" and step0.error.startswith("INVALID_ARGUMENTS")
    assert "repeats the description instead of giving a real value" in step0.error
    call = ToolCall.objects.get(run=run)
    assert (call.tool, call.status) == ("finish_task", "failed")


def test_a_step_that_answers_without_its_tool_is_told_once_then_not_completed(
    llm, shared_worker, owner
):
    llm.script(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("list them", ["list_files"]))]},
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [{"content": "There are three files."}, {"content": "Really, three."}],
            },
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(False)]},
        ]
    )
    run = execute(owner, "list the files")
    step0 = Step.objects.get(run=run)
    assert step0.status == "failed" and step0.error.startswith("EVIDENCE_MISSING")
    assert "list_files" in step0.error and not ToolCall.objects.filter(run=run).exists()
    first, second = requests_for(llm, "AGENTDESK:STEP 0")
    assert NUDGE not in json.dumps(first["messages"])
    assert second["messages"][-2:] == [
        {"role": "assistant", "content": "There are three files."},
        {"role": "user", "content": NUDGE},
    ]
    # The headline names the root cause, the verifier's judgement after it; the verifier's
    # own words are in the details, not the run's error message (issue 32, finding 5).
    cause = f"Step 1 failed: {step0.error}"
    assert (run.status, run.error_code, run.error_cause) == ("failed", "VERIFICATION_FAILED", cause)
    assert run.error_message == f"{cause} — the verifier judged the task incomplete"
    assert error_event(run)["details"] == {"verifier": "scripted", "cause": cause}


def test_a_finish_task_alone_is_no_evidence_for_a_step_that_names_another_tool(
    llm, shared_worker, owner
):
    llm.script(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("list them", ["list_files"]))]},
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [
                    tool_call("finish_task", result="three files"),
                    tool_call("finish_task", result="three files, really"),
                ],
            },
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(False)]},
        ]
    )
    run = execute(owner, "list the files")
    step0 = Step.objects.get(run=run)
    assert step0.status == "failed" and step0.error.startswith("EVIDENCE_MISSING")
    assert run.final_response == ""
    assert NUDGE in json.dumps(requests_for(llm, "AGENTDESK:STEP 0")[1]["messages"])


def test_a_step_that_calls_its_tool_after_the_nudge_completes(llm, shared_worker, owner):
    llm.script(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("list them", ["list_files"]))]},
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [
                    {"content": "There are three files."},
                    tool_call("list_files", path="."),
                    {"content": "The workspace is empty."},
                ],
            },
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "empty", evidence=[1])]},
        ]
    )
    run = execute(owner, "list the files")
    assert run.status == "succeeded", (run.error_code, run.error_message)
    step0 = Step.objects.get(run=run)
    assert (step0.status, step0.output) == ("completed", "The workspace is empty.")
    verify_prompt = requests_for(llm, "AGENTDESK:VERIFY")[0]["messages"][1]["content"]
    assert '[#1] list_files {"path": "."} → ok:' in verify_prompt


def test_a_verdict_citing_no_call_is_asked_again_and_may_then_cite_one(llm, shared_worker, owner):
    llm.script(
        [
            {
                "match": "AGENTDESK:VERIFY",
                "replies": [verdict(True, "done"), verdict(True, "done", evidence=[1])],
            },
            *write_hello_script("hello.txt"),
        ]
    )
    run = execute(owner, "write hello to hello.txt")
    assert run.status == "succeeded", (run.error_code, run.error_message)
    first, second = requests_for(llm, "AGENTDESK:VERIFY")
    assert "evidence cites no tool call" in second["messages"][-1]["content"]
    assert RunEvent.objects.get(run=run, type="verification").payload["evidence"] == [1]


def test_a_verdict_citing_unknown_calls_twice_fails_the_run(llm, shared_worker, owner):
    llm.script(
        [
            {
                "match": "AGENTDESK:VERIFY",
                "replies": [verdict(True, "done", evidence=[7]), verdict(True, "done")],
            },
            *write_hello_script("hello.txt"),
        ]
    )
    run = execute(owner, "write hello to hello.txt")
    assert (run.status, run.error_code) == ("failed", "VERIFICATION_FAILED")
    first, second = requests_for(llm, "AGENTDESK:VERIFY")
    assert (
        "evidence cites [7], which are not successful tool calls"
        in second["messages"][-1]["content"]
    )
    assert "evidence cites no tool call" in error_event(run)["details"]["validation_error"]
