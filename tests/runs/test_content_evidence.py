"""No success on the wrong content (issue 32, finding 4): a run judged complete succeeds only
when the files its task writes hold what the task names for them, and its answer is an answer,
not an error message or a tool call written out; a run that fails says which check failed.
The cases are the ones a local model (SmolLM2) produced, on the fast path and the planned one."""

import pytest

from agents_app.models import Run, RunEvent
from agents_app.runs.lifecycle import workspace_for
from agents_app.worker.execution import execute_run
from tests.support.runs import make_run
from tests.support.script import plan_reply, step, tool_call, verdict
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import make_registry

pytestmark = pytest.mark.django_db(transaction=True)


def file_tools():
    from tools_app.builtin.control import FinishTaskTool
    from tools_app.builtin.files import ListFilesTool, ReadFileTool, WriteFileTool

    return make_registry(
        ListFilesTool(), ReadFileTool(max_bytes=10_000), WriteFileTool(max_bytes=10_000),
        FinishTaskTool(),
    )  # fmt: skip


def run_direct(owner, task, replies) -> Run:
    """`task` on the fast path: one direct step answering with `replies`."""
    run = make_run(owner, task, fast_path=True)
    provider = ScriptedProvider([{"match": "AGENTDESK:DIRECT", "replies": replies}])
    execute_run(run.pk, provider=provider, registry=file_tools())
    return Run.objects.get(pk=run.pk)


def run_planned(owner, task, writes, response="done") -> Run:
    """`task` planned as one write step, judged complete by the verifier citing the write."""
    run = make_run(owner, task, fast_path=False)
    provider = ScriptedProvider(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("write it", ["write_file"]))]},
            {"match": "AGENTDESK:STEP 0", "replies": [writes, {"content": "written"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, response, evidence=[1])]},
        ]
    )
    execute_run(run.pk, provider=provider, registry=file_tools())
    return Run.objects.get(pk=run.pk)


def written(run, name) -> str:
    return (workspace_for(run) / name).read_text()


def error_details(run) -> dict:
    return RunEvent.objects.get(run=run, type="error").payload["details"]


def test_an_answer_that_is_an_error_message_fails_the_run_naming_the_answer_check(owner, settings):
    settings.AGENT_TOOL_ERROR_RETRIES = 1  # as `go` gives a local model: one correction
    run = run_direct(
        owner,
        "Write hello to hello.txt",
        [
            tool_call("read_file", path="hello.txt"),
            tool_call("write_file", path="hello.txt", content="Hello, World!"),
            {"content": "Error: File not found"},
        ],
    )
    assert written(run, "hello.txt") == "Hello, World!"
    assert (run.status, run.error_code) == ("failed", "EVIDENCE_MISSING")
    message = (
        "The answer is an error message, not an answer: “Error: File not found” "
        "— the answer check failed"
    )
    assert (run.error_message, run.error_cause, run.final_response) == (message, message, "")
    assert error_details(run)["check"] == "answer"


def test_an_answer_that_is_a_raw_tool_call_fails_the_run_naming_the_answer_check(owner):
    # The model answers with the call written out (as SmolLM2 did) instead of a result.
    write = tool_call("write_file", path="resume.txt", content="resume")
    raw = tool_call("finish_task", result='write_file: {"path": "resume.txt", "content": "resume"}')
    run = run_direct(owner, "Write the word resume to resume.txt", [write, raw])
    assert (run.status, run.error_code) == ("failed", "EVIDENCE_MISSING")
    assert run.error_message.startswith(
        "The answer is a raw tool call, not an answer: “write_file:"
    )
    assert run.error_message.endswith("— the answer check failed")
    assert error_details(run)["check"] == "answer"


def test_a_file_without_the_word_the_task_names_fails_the_run_naming_the_content_check(owner):
    run = run_direct(
        owner,
        "Save the word banana in fruit.txt",
        [
            tool_call("write_file", path="fruit.txt", content="apple"),
            tool_call("finish_task", result="Saved banana in fruit.txt"),
        ],
    )
    assert (run.status, run.error_code) == ("failed", "EVIDENCE_MISSING")
    assert run.error_message == (
        "The task asks for fruit.txt to hold the word banana, but it holds “apple” "
        "— the content check failed"
    )
    assert run.error_cause == run.error_message
    assert error_details(run) == {"check": "content", "verifier": "the direct step completed"}


@pytest.mark.parametrize(
    ("task", "content"),
    [
        ("Write hello to hello.txt", "Hello, World!"),
        ("Write the word resume to resume.txt", "Your resume.txt"),
        ("Save the word banana in fruit.txt", "BANANA\n"),
        ("Create notes.md containing 'buy milk'", "# Notes\n\n- Buy   milk\n"),
        ("Write the number 42 to answer.txt", "The answer is 42."),
        ("Write a greeting to hello.txt", "Good morning!"),
    ],
)
def test_a_file_holding_what_the_task_names_among_more_succeeds(owner, task, content):
    name = next(word for word in task.split() if "." in word)
    run = run_direct(
        owner,
        task,
        [
            tool_call("write_file", path=name, content=content),
            tool_call("finish_task", result=f"Wrote {name}"),
        ],
    )
    assert run.status == "succeeded", run.error_message
    assert run.final_response == f"Wrote {name}"


def test_a_planned_run_whose_file_has_the_wrong_count_fails_though_the_verifier_said_done(owner):
    task = "Create notes.md with 3 bullet points."
    two = tool_call("write_file", path="notes.md", content="# Notes\n- milk\n- eggs\n")
    run = run_planned(owner, task, two)
    assert (run.status, run.error_code) == ("failed", "EVIDENCE_MISSING")
    assert run.error_message == (
        "The task asks for notes.md to hold 3 bullet points, but it holds 2 items "
        "— the content check failed"
    )
    three = tool_call("write_file", path="notes.md", content="# Notes\n- milk\n- eggs\n- tea\n")
    assert run_planned(owner, task, three).status == "succeeded"


def test_a_planned_run_whose_verdict_answers_with_an_error_fails(owner):
    writes = tool_call("write_file", path="out.txt", content="hi")
    run = run_planned(owner, "Write 'hi' to out.txt", writes, response="FileNotFoundError: out.txt")
    assert (run.status, run.error_code) == ("failed", "EVIDENCE_MISSING")
    assert run.error_message.endswith("— the answer check failed")
    assert run_planned(owner, "Write 'hi' to out.txt", writes).status == "succeeded"


def test_a_missing_file_names_the_files_check(owner):
    writes = tool_call("write_file", path="other.txt", content="hi")
    run = run_planned(owner, "Write 'hi' to out.txt", writes)
    assert run.error_message == (
        "The task asks for out.txt, but the workspace has no such file — the files check failed"
    )
    assert error_details(run) == {"check": "files", "missing": ["out.txt"], "verifier": "scripted"}
