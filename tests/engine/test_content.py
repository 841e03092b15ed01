"""What the files a task writes must hold, read from the task's structure (quotes, named
content, counts), and answers that are no answer (issue 32, finding 4): pure functions."""

import pytest

from agents_app.engine.content import answer_problem, content_problem, content_rules
from agents_app.engine.evidence import CallRecord


def named(task: str) -> list[tuple]:
    return [(r.files, r.text or (r.count, r.unit)) for r in content_rules(task)]


@pytest.mark.parametrize(
    ("task", "rules"),
    [
        # The real-model bench's tasks (bench/real_model.py).
        ("Write hello to hello.txt", [(("hello.txt",), "hello")]),
        ("Save the word banana in fruit.txt", [(("fruit.txt",), "banana")]),
        ("Create notes.md containing 'buy milk'", [(("notes.md",), "buy milk")]),
        ("Write the number 42 to answer.txt", [(("answer.txt",), "42")]),
        ("Copy greeting.txt to copy.txt", []),
        ("List the files in the workspace.", []),
        ("What is 2+2? Answer with finish_task.", []),
        # Quotes of any kind; a quoted file name is a file, not content.
        ("Write 'hi' to `out.txt`", [(("out.txt",), "hi")]),
        ('Write "Hello. Bye." into a.txt', []),  # the files check finds no file either
        ("Write a.txt saying \u00abbonjour\u00bb", [(("a.txt",), "bonjour")]),
        ("Write \u201cgood night\u201d to n.txt", [(("n.txt",), "good night")]),
        ("Write the word resume to resume.txt", [(("resume.txt",), "resume")]),
        ("Put 42 in answer.json", [(("answer.json",), "42")]),
        ("write hello.txt with hello", [(("hello.txt",), "hello")]),
        # Counts.
        ("Create notes.md with three bullet points", [(("notes.md",), (3, "items"))]),
        ("Write a poem of 4 lines to poem.txt", []),  # "of": a description
        ("Write 4 lines to poem.txt", [(("poem.txt",), (4, "lines"))]),
        # Described, derived from a file, or not written: left to the verifier.
        ("Write a greeting to hello.txt", []),
        ("Write code to app.py", []),
        ("Write a summary of 'War and Peace' to summary.md", []),
        ("Copy the first 10 lines of a.txt to b.txt", []),
        ("Write the word count of notes.txt to count.txt", []),
        ("Write 2 copies of hello to x.txt", []),
        ("Create a file called notes.md with three ideas", []),
        ("Don't write 'x' to a.txt", []),
        ("Read 'notes' in notes.txt", []),
        ("Write the answer to a.txt. Then write it again to a.txt", []),
    ],
)
def test_what_a_task_names_for_its_files_to_hold(task, rules):
    assert named(task) == rules


@pytest.mark.parametrize(
    ("task", "content", "holds"),
    [
        ("Write hello to hello.txt", "Hello, World!", True),
        ("Write hello to hello.txt", "Goodbye", False),
        ("Write hello to hello.txt", "Othello", False),  # whole words only
        ("Write the word resume to resume.txt", "Your resume.txt", True),
        ("Save the word banana in fruit.txt", "  BANANA\n", True),
        ("Create notes.md containing 'buy milk'", "- Buy\n  milk", True),
        ("Create notes.md containing 'buy milk'", "buy bread", False),
        ("Write the number 42 to answer.txt", "42\n", True),
        ("Write the number 42 to answer.txt", "420", False),
        ("Create notes.md with three bullet points", "# Notes\n- a\n  - a.1\n* b\n1. c\n", True),
        ("Create notes.md with three bullet points", "- a\n- b\n", False),
        ("Create notes.md with three bullet points", "a\n\nb\nc\n", True),  # lines as items
        ("Write 4 lines to poem.txt", "one\ntwo\n\nthree\nfour\n", True),
        ("Write 4 lines to poem.txt", "one\ntwo\n", False),
    ],
)
def test_a_file_holds_the_named_content_ignoring_case_spacing_and_what_is_around_it(
    task, content, holds
):
    problem = content_problem(task, lambda name: content)
    assert (problem == "") is holds, problem


def test_the_content_problem_says_what_was_asked_and_what_the_file_holds():
    problem = content_problem("Save the word banana in fruit.txt", {"fruit.txt": "apple"}.get)
    assert problem == "the task asks for fruit.txt to hold the word banana, but it holds “apple”"
    # A missing file is the files check's to report.
    assert content_problem("Save the word banana in fruit.txt", {}.get) == ""


def test_content_named_for_two_files_may_stand_in_either():
    read = {"a.txt": "hello", "b.txt": "bye"}.get
    assert content_problem("Write 'hello' to a.txt and b.txt", read) == ""


FAILED_READ = CallRecord(
    1, 0, "read_file", {"path": "x.txt"}, False, "File 'x.txt' does not exist in the workspace"
)
WRITE = CallRecord(2, 0, "write_file", {"path": "x.txt"}, True, '{"path": "x.txt"}')


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("Error: File not found", "error message"),
        ("error: no such file", "error message"),
        ("FileNotFoundError: x.txt", "error message"),
        ("Traceback (most recent call last): ...", "error message"),
        ("I could not: File 'x.txt' does not exist in the workspace.", "error message"),
        ('write_file: {"path": "resume.txt", "bytes": 15}', "raw tool call"),
        ('finish_task({"result": "done"})', "raw tool call"),
        ('{"name": "write_file", "arguments": {"path": "a.txt"}}', "raw tool call"),
        ("4", ""),
        ("Paris", ""),
        ("Errors: none, x.txt was written.", ""),
        ("Wrote hello.txt", ""),
        ('config: {"debug": true}', ""),  # not a tool the run called
        ('{"debug": true}', ""),
    ],
)
def test_an_error_message_or_a_tool_call_written_out_is_no_answer(answer, why):
    problem = answer_problem(answer, [FAILED_READ, WRITE])
    assert why in problem if why else problem == "", problem
