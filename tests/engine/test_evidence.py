"""What a run can show for itself: the files a task asks to write, and verdicts that cite the
run's tool calls (pure functions, no database)."""

import pytest

from agents_app.engine.evidence import CallRecord, citable_numbers, files_to_write
from agents_app.engine.executor import StepInput, execute_step
from agents_app.engine.prompts import verify_messages
from agents_app.engine.schemas import VerificationOutput
from agents_app.engine.verifier import check_evidence, verification_schema
from tests.support.script import tool_call
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import EchoTool, FinishTool, make_registry


@pytest.mark.parametrize(
    ("task", "files"),
    [
        ("write hello to hello.txt", ["hello.txt"]),
        ("Write a greeting to hello.txt", ["hello.txt"]),
        ("save the list as files.md", ["files.md"]),
        ("List the files and save the list to files.md", ["files.md"]),
        ("create notes/todo.txt containing buy milk", ["notes/todo.txt"]),
        ("Put 42 in answer.json", ["answer.json"]),
        ("Store the answer in answer.txt.", ["answer.txt"]),
        ("Append bye to log.txt", ["log.txt"]),
        ("Output the result to result.csv", ["result.csv"]),
        ("Create a file called notes.md with three ideas", ["notes.md"]),
        ("write hello.txt with hello", ["hello.txt"]),
        ("Write 'hi' to `out.txt`", ["out.txt"]),
        ("Create files a.txt and b.txt", ["a.txt", "b.txt"]),
        ("Write hello to a.txt and b.txt", ["a.txt", "b.txt"]),
        ("copy a.txt to b.txt", ["b.txt"]),
        ("Write a summary of report.pdf to summary.md", ["summary.md"]),
        ("Read notes.txt and write its length to length.txt.", ["length.txt"]),
        ("Write a Node.js script to app.js", ["app.js"]),
        ("Fetch https://example.com/data.csv and save it as data.csv", ["data.csv"]),
        ("Write the answer to a.txt. Then write it again to a.txt", ["a.txt"]),
        ("Write the word count of notes.txt", []),
        ("read hello.txt", []),
        ("summarise report.pdf", []),
        ("What does config.yaml say?", []),
        ("list the files", []),
        ("2+2, answer with finish_task", []),
        ("write hello", []),
        ("Do not write to secret.txt, just read it", []),
        ("Don\u2019t write x.txt", []),
        ("write to /tmp/x.txt", []),
        ("Store the answer in ../up.txt", []),
        ("write it down, e.g. in a note", []),
        ("Write the version 1.2 notes", []),
    ],
)
def test_files_a_task_asks_to_write(task, files):
    assert files_to_write(task) == files


CALLS = [
    CallRecord(1, 0, "write_file", {"path": "hello.txt", "content": "hello"}, True, '{"ok": 1}'),
    CallRecord(2, 0, "read_file", {"path": "nope.txt"}, False, "no such file"),
    CallRecord(3, 1, "finish_task", {"result": "done"}, True, '{"result": "done"}'),
]


def test_only_successful_calls_that_did_work_can_be_cited():
    assert citable_numbers(CALLS) == [1]


def test_the_verifier_sees_each_steps_calls_and_their_results():
    messages = verify_messages(
        task="write hello to hello.txt",
        context={},
        steps=[(0, "write it", "completed", "wrote it"), (1, "finish", "completed", "done")],
        can_replan=False,
        calls=[*CALLS, CallRecord(4, None, "list_files", {}, True, "[]")],
    )
    report = messages[1]["content"]
    assert '[#1] write_file {"path": "hello.txt", "content": "hello"} → ok: {"ok": 1}' in report
    assert "[#2] read_file" in report and "→ failed: no such file" in report
    assert report.index("[#2]") < report.index("Step 1") < report.index("[#3]")
    assert "Tool calls of earlier plans:\n  [#4] list_files" in report
    assert "evidence" in messages[0]["content"]


@pytest.mark.parametrize("evidence", [[], [2], [1, 3], [9]])
def test_a_complete_verdict_must_cite_only_successful_calls(evidence):
    verdict = VerificationOutput(task_complete=True, evidence=evidence)
    with pytest.raises(ValueError, match="evidence"):
        check_evidence(verdict, [1])


def test_a_verdict_citing_a_successful_call_or_judging_incomplete_is_valid():
    check_evidence(VerificationOutput(task_complete=True, evidence=[1]), [1, 4])
    check_evidence(VerificationOutput(task_complete=False), [1])
    check_evidence(VerificationOutput(task_complete=True), [])  # nothing to cite


def test_the_verifier_schema_lists_the_citable_calls():
    evidence = verification_schema([1, 4])["properties"]["evidence"]
    assert evidence["items"] == {"type": "integer", "enum": [1, 4]}
    assert verification_schema([])["properties"]["evidence"]["maxItems"] == 0


class QuietHooks:
    """Hooks that allow everything and record nothing: the engine alone, no database."""

    def checkpoint(self):
        pass

    def poll(self):
        pass

    def on_llm_usage(self, usage, model):
        pass

    def on_token(self, text, *, phase, step_index, reasoning=False):
        pass

    def before_tool_call(self, tool, arguments):
        return None

    def approval_needed(self, tool, arguments):
        return None

    def after_tool_call(self, handle, *, result, error_code="", error=""):
        pass


def run_step(replies, **step_fields):
    provider = ScriptedProvider([{"match": "AGENTDESK:STEP", "replies": replies}])
    step = StepInput(
        index=0,
        total=1,
        objective="say it",
        reasoning="",
        tool_names=["echo"],
        earlier=[],
        **step_fields,
    )
    outcome = execute_step(
        provider=provider,
        registry=make_registry(EchoTool(), FinishTool()),
        hooks=QuietHooks(),
        task="say it",
        context={},
        step=step,
        workspace=None,
        run_id=1,
        timeout=30,
        max_rounds=5,
    )
    return outcome, provider


def test_a_step_naming_a_tool_answers_in_prose_only_after_using_it():
    outcome, provider = run_step([{"content": "said"}, {"content": "said it"}])
    assert (outcome.status, outcome.error_code) == ("failed", "EVIDENCE_MISSING")
    assert len(provider.requests) == 2
    outcome, _ = run_step([tool_call("echo", text="it"), {"content": "said"}])
    assert (outcome.status, outcome.output) == ("completed", "said")


def test_a_step_told_it_must_use_no_tool_may_answer_in_prose():
    outcome, provider = run_step([{"content": "4"}], must_use=())
    assert (outcome.status, outcome.output) == ("completed", "4")
    assert len(provider.requests) == 1
