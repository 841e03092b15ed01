"""The no-model demo's reading of a task: which tools it runs for which words
(tests/worker/test_demo_runs.py runs each kind through a real worker)."""

import pytest

from agents_app.demo.tasks import DEFAULT_URL, REPLAN_FILE, Action, task_actions


@pytest.mark.parametrize(
    ("task", "actions"),
    [
        ("Read notes.txt", [Action("read_file", "notes.txt")]),
        ("What does notes.txt say?", [Action("read_file", "notes.txt")]),
        ("Write hello to hello.txt", [Action("write_file", "hello.txt", "hello")]),
        ("Create a.md containing two words", [Action("write_file", "a.md", "two words")]),
        ('Save b.md with "Hi there".', [Action("write_file", "b.md", "Hi there")]),
        ("List the files", [Action("list_files")]),
        ("Fetch https://example.org/x.", [Action("http_get", "https://example.org/x")]),
        ("Summarise http://example.org/a", [Action("http_get", "http://example.org/a")]),
        ("Fetch the news", [Action("http_get", DEFAULT_URL)]),
        ("What is the capital of France?", []),
    ],
)
def test_the_demo_reads_what_a_task_asks_for_from_its_words(task, actions):
    assert task_actions(task) == actions


def test_a_write_after_a_read_writes_what_the_read_found_not_the_words_before_the_file():
    assert task_actions("Read notes.txt and save it to copy.txt") == [
        Action("read_file", "notes.txt"),
        Action("write_file", "copy.txt", ""),
    ]


def test_actions_run_in_the_order_the_task_names_them_and_a_written_file_can_be_read():
    assert task_actions("Create a.md containing hi, then read a.md") == [
        Action("write_file", "a.md", "hi"),
        Action("read_file", "a.md"),
    ]
    assert task_actions("Write hi to a.md. Then list the files") == [
        Action("write_file", "a.md", "hi"),
        Action("list_files"),
    ]


def test_a_task_that_asks_for_a_failure_ends_by_writing_then_reading_the_missing_file():
    assert [(a.tool, a.target) for a in task_actions("Please fail, then replan")] == [
        ("write_file", REPLAN_FILE),
        ("read_file", REPLAN_FILE),
    ]
