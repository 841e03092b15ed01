"""Two runs compared (issue 36, item 5): attempts of one task driven in-process, aligned step by
step and call by call, with the first point where they part named."""

import pytest

from agents_app.core.errors import DomainError
from agents_app.engine.run_diff import FileRecord, RunRecord, runs_compare
from agents_app.models import ChangeKind, Run, WorkspaceChange
from agents_app.runs.diff import run_diff, run_diff_out, run_files_left
from tests.support.diffs import attempt, echo_script
from tests.support.runs import make_run
from tests.support.workspaces import own_workspaces, write_files

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("own_workspaces")]
__all__ = ["own_workspaces"]


def compared(owner, a: Run, b: Run) -> dict:
    return run_diff_out(*run_diff(user=owner, a_id=a.pk, b_id=b.pk))


def test_attempts_that_differ_in_step_2s_arguments_part_at_step_2_call_1(owner):
    first = attempt(echo_script("two"), owner=owner)
    second = attempt(echo_script("TWO"), of=first)
    assert (first.status, second.status) == ("succeeded", "succeeded")

    diff = compared(owner, first, second)

    assert diff["first_divergence"] == {
        "field": "arguments",
        "reason": "step 2: call 1 echo arguments differ",
        "anchor": "step-2-call-1",
        "step": 2,
        "call": 1,
    }
    assert [row["same"] for row in diff["steps"]] == [True, False, True]
    call = diff["steps"][1]["calls"][0]
    assert call["differs"] == ["arguments", "result"]
    assert (call["a"]["arguments"], call["b"]["arguments"]) == ('{"text":"two"}', '{"text":"TWO"}')
    assert call["a"]["result_sha256"] != call["b"]["result_sha256"]
    # The outputs differ too, and the outcome does not: each is reported where it is.
    assert diff["steps"][1]["differs"] == ["output"]
    assert diff["outcome"]["same"] is True
    assert (diff["a"]["id"], diff["b"]["id"]) == (first.pk, second.pk)
    assert (diff["a"]["attempt"], diff["b"]["attempt"]) == (1, 2)


def test_identical_attempts_have_no_divergence(owner):
    first = attempt(echo_script(), owner=owner)
    second = attempt(echo_script(), of=first)

    diff = compared(owner, first, second)

    assert diff["first_divergence"] is None and diff["divergences"] == 0
    assert all(row["same"] for row in diff["steps"]) and len(diff["steps"]) == 3
    assert diff["tokens"]["a"] == diff["tokens"]["b"]
    assert diff["tokens"]["difference"] == {"prompt": 0, "completion": 0, "total": 0}
    assert diff["time"]["a"]["seconds"] is not None


def test_attempts_that_end_differently_part_at_their_outcome(owner):
    first = attempt(echo_script(), owner=owner)
    second = attempt(echo_script(complete=False), of=first)
    assert second.status == "failed"

    diff = compared(owner, first, second)

    divergence = diff["first_divergence"]
    assert divergence["reason"] == "outcome: succeeded vs failed"
    assert (divergence["anchor"], divergence["step"], divergence["call"]) == ("outcome", None, None)
    assert "status" in diff["outcome"]["differs"]


def test_another_persons_run_is_not_found(owner, outsider):
    mine = make_run(owner)
    theirs = make_run(outsider, "secret plans")

    with pytest.raises(DomainError) as refused:
        run_diff(user=owner, a_id=mine.pk, b_id=theirs.pk)

    assert refused.value.code == "NOT_FOUND"


def test_a_step_only_one_run_has_is_where_they_part():
    one = RunRecord(status="succeeded")
    diff = runs_compare(one, RunRecord(status="succeeded", files=(FileRecord("a.md", "ab", 2),)))

    assert diff.first_divergence.reason == "files: a.md only in b"
    assert diff.files == [
        {"path": "a.md", "a": None, "b": {"sha256": "ab", "size": 2, "kind": "file"}, "same": False}
    ]


def test_files_come_from_the_journal_when_the_run_kept_one_else_from_the_workspace(owner):
    journaled = make_run(owner)
    for seq, (path, kind, sha) in enumerate(
        [("a.md", "write", "1" * 64), ("b.md", "write", "2" * 64), ("b.md", "delete", "")],
        start=1,
    ):
        WorkspaceChange.objects.create(
            run=journaled, seq=seq, path=path, kind=ChangeKind(kind), sha256=sha, size=3
        )
    Run.objects.filter(pk=journaled.pk).update(journal_seq=3)
    journaled.refresh_from_db()
    older = make_run(owner)
    Run.objects.filter(pk=older.pk).update(journaled=False)
    older.refresh_from_db()
    write_files(older, {"a.md": "abc"})

    from_journal, source = run_files_left(journaled)
    assert source == "journal"
    assert [(f.path, f.sha256) for f in from_journal] == [("a.md", "1" * 64)]
    on_disk, source = run_files_left(older)
    assert source == "workspace"
    assert [(f.path, f.size) for f in on_disk] == [("a.md", 3)]
    assert on_disk[0].sha256 == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
