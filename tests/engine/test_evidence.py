"""What a run can show for itself: the files a task asks to write, and verdicts that cite the
run's tool calls (pure functions, no database)."""

import pytest

from agents_app.engine.evidence import CallRecord, citable_numbers, files_to_write
from agents_app.engine.executor import StepInput, execute_step, result_in_words
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
    # Steps numbered from 1, as the pages number them (issue 32, finding 5).
    assert report.index("[#2]") < report.index("Step 2") < report.index("[#3]")
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


def run_step(replies, echo=None, **step_fields):
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
        registry=make_registry(echo or EchoTool(), FinishTool()),
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


def test_a_call_repeating_the_one_that_succeeded_is_not_made_again_and_twice_ends_the_step():
    echo = EchoTool()
    same = tool_call("echo", text="it")
    outcome, provider = run_step([same, same, same, {"content": "never asked"}], echo=echo)
    assert echo.calls == ["it"]
    # The result in words is the answer, not the call written out.
    assert (outcome.status, outcome.output) == ("completed", "- echo: it")
    told = [m for m in provider.requests[-1].messages if "already succeeded" in str(m)]
    assert [m["role"] for m in told] == ["tool"]
    assert len(provider.requests) == 3


@pytest.mark.parametrize(
    ("result", "words"),
    [
        ('{"path": "greeting.txt", "content": "Good morning, Ada!"}', "Good morning, Ada!"),
        (
            '{"path": ".", "entries": [{"path": "greeting.txt", "size": 19}, {"path": "todo.md"}]}',
            "- greeting.txt\n- todo.md",
        ),
        ('{"path": "hello.txt", "bytes_written": 13}', "- path: hello.txt\n- bytes_written: 13"),
        ('["a", "b"]', "- a\n- b"),
        ("not JSON", "not JSON"),
    ],
)
def test_a_result_in_words_is_its_text_or_its_items_never_the_call(result, words):
    assert result_in_words(result) == words


def test_the_same_call_after_another_one_is_made_again():
    echo = EchoTool()
    replies = [
        tool_call("echo", text="a"),
        tool_call("echo", text="b"),
        tool_call("echo", text="a"),
        {"content": "said"},
    ]
    outcome, _ = run_step(replies, echo=echo)
    assert echo.calls == ["a", "b", "a"]
    assert (outcome.status, outcome.output) == ("completed", "said")


def test_a_step_told_it_must_use_no_tool_may_answer_in_prose():
    outcome, provider = run_step([{"content": "4"}], must_use=())
    assert (outcome.status, outcome.output) == ("completed", "4")
    assert len(provider.requests) == 1


def run_direct(replies, task, workspace, error_retries=0):
    """The fast path's one step, with the builtin file tools in `workspace`."""
    from tools_app.builtin.control import FinishTaskTool
    from tools_app.builtin.files import ListFilesTool, ReadFileTool, WriteFileTool

    provider = ScriptedProvider([{"match": "AGENTDESK:DIRECT", "replies": replies}])
    registry = make_registry(
        ListFilesTool(),
        ReadFileTool(max_bytes=10_000),
        WriteFileTool(max_bytes=10_000),
        FinishTaskTool(),
    )
    step = StepInput(
        index=0,
        total=1,
        objective=task,
        reasoning="",
        tool_names=["list_files", "read_file", "write_file", "finish_task"],
        earlier=[],
        direct=True,
    )
    outcome = execute_step(
        provider=provider,
        registry=registry,
        hooks=QuietHooks(),
        task=task,
        context={},
        step=step,
        workspace=workspace,
        run_id=1,
        timeout=30,
        max_rounds=6,
        error_retries=error_retries,
    )
    return outcome, provider


def test_a_direct_step_may_not_finish_before_the_file_its_task_names_exists(tmp_path):
    task = "Save the word banana in fruit.txt"
    finish = tool_call("finish_task", result="banana")
    outcome, provider = run_direct([finish, finish], task, tmp_path)
    assert (outcome.status, outcome.error_code) == ("failed", "EVIDENCE_MISSING")
    assert "fruit.txt" in outcome.error
    told = provider.requests[-1].messages
    assert any("fruit.txt not written yet" in str(m.get("content")) for m in told)
    assert offered(provider.requests[-1]) == {"write_file": ["fruit.txt"]}
    write = tool_call("write_file", path="fruit.txt", content="banana")
    outcome, _ = run_direct([finish, write, finish], task, tmp_path / "second")
    assert (outcome.status, outcome.output) == ("completed", "banana")
    assert (tmp_path / "second" / "fruit.txt").read_text() == "banana"


def offered(request) -> dict[str, list | None]:
    """The tools a request offers, each with the paths it is limited to (None: any)."""
    return {
        tool.name: tool.parameters.get("properties", {}).get("path", {}).get("enum")
        for tool in request.tools
    }


def test_once_refused_a_step_owing_a_file_is_offered_only_the_tools_to_read_and_write_it(
    tmp_path,
):
    (tmp_path / "greeting.txt").write_text("Good morning")
    task = "Copy greeting.txt to copy.txt"
    replies = [
        tool_call("list_files", path="copy.txt"),
        tool_call("read_file", path="greeting.txt"),
        tool_call("write_file", path="copy.txt", content="Good morning"),
        tool_call("finish_task", result="copied"),
    ]
    outcome, provider = run_direct(replies, task, tmp_path, error_retries=1)
    assert (outcome.status, outcome.output) == ("completed", "copied")
    first, corrected, after_reading, after_writing = provider.requests
    assert set(offered(first)) == {"list_files", "read_file", "write_file", "finish_task"}
    assert offered(first)["write_file"] is None
    assert offered(corrected) == {"read_file": ["greeting.txt"], "write_file": ["copy.txt"]}
    assert offered(after_reading) == {"write_file": ["copy.txt"]}
    assert offered(after_writing) == {"finish_task": None}


def test_a_step_owing_nothing_or_not_yet_refused_is_offered_every_tool(tmp_path):
    finish = tool_call("finish_task", result="4")
    _, provider = run_direct([finish], "What is 2+2?", tmp_path, error_retries=1)
    wrong = tool_call("list_files", path="nowhere")
    _, refused = run_direct([wrong, finish], "What is 2+2?", tmp_path, error_retries=1)
    for request in [*provider.requests, *refused.requests]:
        assert len(offered(request)) == 4


def test_a_direct_answer_repeating_the_task_is_refused_once_then_fails(tmp_path):
    task = "What is 2+2? Answer with finish_task."
    echo = tool_call("finish_task", result="2+2")
    outcome, provider = run_direct([echo, echo], task, tmp_path)
    assert (outcome.status, outcome.error_code) == ("failed", "VERIFICATION_FAILED")
    assert "only repeats the task" in outcome.error
    outcome, _ = run_direct([echo, tool_call("finish_task", result="4")], task, tmp_path)
    assert (outcome.status, outcome.output) == ("completed", "4")
    outcome, _ = run_direct([{"content": "blue"}], "Is the sky blue or red?", tmp_path)
    assert (outcome.status, outcome.output) == ("completed", "blue")


@pytest.mark.parametrize(
    ("answer", "task", "echoes"),
    [
        ("2+2", "What is 2+2?", True),
        ("the sky", "What colour is the sky?", True),
        ("4", "What is 2+2?", False),
        ("blue", "Is the sky blue or red?", False),
        ("2 + 3", "What is 2+2?", False),
        ("Good morning, Ada!", "Read greeting.txt", False),
    ],
)
def test_an_answer_echoes_the_task_when_two_or_more_of_its_words_stand_there_in_order(
    answer, task, echoes
):
    from agents_app.engine.evidence import echoes_task

    assert echoes_task(answer, task) is echoes


def test_a_failed_call_is_shown_to_the_model_to_correct_while_retries_last(tmp_path):
    task = "Write hello to hello.txt"
    wrong = tool_call("list_files", path="nowhere")
    write = tool_call("write_file", path="hello.txt", content="hello")
    finish = tool_call("finish_task", result="wrote it")
    outcome, _ = run_direct([wrong, write, finish], task, tmp_path, error_retries=0)
    assert (outcome.status, outcome.error_code) == ("failed", "TOOL_FAILED")
    outcome, provider = run_direct([wrong, write, finish], task, tmp_path, error_retries=1)
    assert (outcome.status, outcome.output) == ("completed", "wrote it")
    shown = [m for m in provider.requests[-1].messages if "Correct the call" in str(m)]
    assert [m["role"] for m in shown] == ["tool"] and "nowhere" in shown[0]["content"]
    outcome, _ = run_direct([wrong, wrong, finish], task, tmp_path, error_retries=1)
    assert (outcome.status, outcome.error_code) == ("failed", "TOOL_FAILED")


def test_an_argument_holding_the_tools_own_name_is_refused_unless_the_task_names_it(tmp_path):
    copied = tool_call("write_file", path="write_file.txt", content="42")
    finish = tool_call("finish_task", result="done")
    outcome, _ = run_direct([copied, finish], "Write 42 to answer.txt", tmp_path)
    assert (outcome.status, outcome.error_code) == ("failed", "INVALID_ARGUMENTS")
    assert "repeats the tool's name" in outcome.error
    assert not (tmp_path / "write_file.txt").exists()
    outcome, _ = run_direct([copied, finish], "Write 42 to write_file.txt", tmp_path)
    assert (outcome.status, outcome.output) == ("completed", "done")


def test_an_optional_argument_holding_the_tools_own_name_is_left_out(tmp_path):
    (tmp_path / "a.txt").write_text("a")
    listing = tool_call("list_files", path="list_files")
    finish = tool_call("finish_task", result="a.txt")
    outcome, provider = run_direct([listing, finish], "List the files", tmp_path)
    assert (outcome.status, outcome.output) == ("completed", "a.txt")
    result = next(m for m in provider.requests[-1].messages if m["role"] == "tool")
    assert "a.txt" in result["content"]


def test_a_plan_invalid_twice_fails_saying_what_was_wrong_with_it():
    from agents_app.core.errors import DomainError, ErrorCode
    from agents_app.engine.schemas import PlanOutput
    from agents_app.engine.structured import ask_structured

    bad = {"content": '{"steps": [{"tool_names": ["write_file"]}]}'}
    provider = ScriptedProvider([{"match": "", "replies": [bad, bad]}])
    with pytest.raises(DomainError) as raised:
        ask_structured(
            provider=provider,
            hooks=QuietHooks(),
            messages=[{"role": "user", "content": "plan it"}],
            model=PlanOutput,
            phase="planning",
            timeout=30,
            fail_code=ErrorCode.PLANNING_FAILED,
            timeout_code=ErrorCode.PLANNING_TIMEOUT,
        )
    assert raised.value.message == (
        "The model's planning answer was invalid twice: steps.0.objective: Field required"
    )
    assert "objective" in raised.value.details["validation_error"]
