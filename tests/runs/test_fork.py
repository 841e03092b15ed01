"""Forking a run (issue 36, item 3): a run of the source's kind that goes on after one of its
completed steps, its earlier steps copied (never run again), its workspace rebuilt from the
journal as it was then, on the one engine, optionally on another model, with an extra
instruction or with the remaining steps edited."""

import os
from datetime import timedelta

import pytest

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.models import (
    AuditEvent,
    Origin,
    Plan,
    Run,
    RunStatus,
    Step,
    ToolCall,
    WorkspaceChange,
)
from agents_app.runs.control import kill_switch_set
from agents_app.runs.diff import run_diff, run_diff_out
from agents_app.runs.files import workspace_dir
from agents_app.runs.forks import run_fork
from agents_app.runs.journal_files import journal_files, journal_point
from agents_app.runs.presenters import finished_payload
from tests.support.forks import executed, five_step_run, fork_script, other_connection
from tests.support.journal import run_steps
from tests.support.runs import make_run
from tests.support.script import tool_call
from tests.support.workspaces import own_workspaces

# Nothing is sent to a broker: the tests execute the forks they make themselves.
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("own_workspaces", "queued_runs"),
]
__all__ = ["own_workspaces"]

ONE_SECOND = timedelta(seconds=1)


def fork(owner, source, after_step=3, **options):
    return run_fork(
        user=owner, run_id=source.pk, after_step=after_step, actor=owner, interface="api", **options
    )


def markers(llm) -> list[str]:
    """Which phase (and step) each request to the scripted server was."""
    found = []
    for body in llm.requests:
        first = body["messages"][0]["content"].split("\n")[0]
        found.append(first.removeprefix("AGENTDESK:"))
    return found


def refused(code, field=None, **call):
    with pytest.raises(DomainError) as caught:
        fork(**call)
    assert caught.value.code == code, caught.value.message
    if field is not None:
        assert caught.value.details["field"] == field
    return caught.value


@pytest.mark.dialect
def test_a_fork_after_step_3_on_another_model_runs_only_steps_4_and_5_from_the_files_after_step_3(
    owner, llm, queued_runs
):
    source = five_step_run(owner)
    assert (workspace_dir(source) / "a.txt").read_text() == "a after step 4"
    other = other_connection(llm)
    llm.script(fork_script())

    forked = fork(owner, source, connection=other.pk)
    assert queued_runs == [forked.pk]  # queued for a worker like any new run

    # Its workspace is the source's after step 3: a.txt as step 3 left it, b.txt from step 2.
    directory = workspace_dir(forked)
    assert (directory / "a.txt").read_text() == "a after step 3"
    assert (directory / "b.txt").read_text() == "b after step 2"
    forked = executed(forked)
    assert forked.status == RunStatus.SUCCEEDED, (forked.error_code, forked.error_message)
    # Only steps 4 and 5 (and the verdict) asked a model: the fork's, another one.
    assert markers(llm) == ["STEP 3", "STEP 3", "STEP 4", "STEP 4", "VERIFY"]
    assert {body["model"] for body in llm.requests} == {"other-model"}
    assert (forked.connection_id, forked.llm_model) == (other.pk, "other-model")
    # Step 4 found a.txt as step 3 left it, and was shown steps 1-3's outputs as earlier steps.
    read = ToolCall.objects.get(run=forked, tool="read_file")
    assert "a after step 3" in str(read.result)
    step_4_input = llm.requests[0]["messages"][1]["content"]
    assert all(f"step {k} done" in step_4_input for k in (1, 2, 3))
    # Steps 1-3 are the source's, copied; 4-5 its own.
    steps = list(Step.objects.filter(run=forked).order_by("index"))
    assert [s.output for s in steps] == [
        "step 1 done",
        "step 2 done",
        "step 3 done",
        "step 4 read",
        "step 5 done",
    ]
    originals = list(Step.objects.filter(run=source).order_by("index"))
    assert [s.finished_at for s in steps[:3]] == [s.finished_at for s in originals[:3]]
    assert ToolCall.objects.filter(run=forked, tool="write_file").count() == 3
    assert (forked.origin, forked.origin_run_id, forked.origin_step) == (
        Origin.FORK,
        source.pk,
        3,
    )
    assert (forked.task_id, forked.kind, forked.attempt) == (source.task_id, source.kind, 2)
    # Its run.finished webhook says so, as REST and MCP do (runs.presenters).
    assert finished_payload(forked)["origin"] == {
        "kind": "fork",
        "run_id": source.pk,
        "after_step": 3,
        "plan_version": 1,
    }
    # The two runs part at step 4.
    diff = run_diff_out(*run_diff(user=owner, a_id=source.pk, b_id=forked.pk))
    assert diff["first_divergence"]["step"] == 4
    assert [row["same"] for row in diff["steps"]][:3] == [True, True, True]


def test_an_extra_instruction_reaches_every_later_step_and_an_edited_plan_replaces_the_rest(
    owner, llm
):
    source = five_step_run(owner)
    llm.script(
        [
            {
                "match": "AGENTDESK:STEP 3",
                "replies": [tool_call("echo", text="x"), {"content": "read the notes"}],
            },
            {"match": "AGENTDESK:VERIFY", "replies": fork_script()[-1]["replies"]},
        ]
    )

    forked = fork(
        owner,
        source,
        steps=["  read the notes  ", ""],
        instruction="Answer in French.",
    )

    plan = Plan.objects.get(run=forked)
    assert [s["objective"] for s in plan.raw["steps"]] == [
        "step 1",
        "step 2",
        "step 3",
        "read the notes",
    ]
    forked = executed(forked)
    assert forked.status == RunStatus.SUCCEEDED, (forked.error_code, forked.error_message)
    assert markers(llm)[0] == "STEP 3"
    step_requests = [b for b in llm.requests if "AGENTDESK:STEP" in b["messages"][0]["content"]]
    assert step_requests and all(
        "Answer in French." in b["messages"][0]["content"] for b in step_requests
    )
    assert "Step 4: read the notes" in step_requests[0]["messages"][1]["content"]
    assert forked.origin_options == {
        "steps": ["read the notes"],
        "instruction": "Answer in French.",
    }
    audit = AuditEvent.objects.get(action="run.fork")
    assert audit.run_id == source.pk and audit.details["new_run_id"] == forked.pk


def test_a_fork_after_the_last_step_only_judges_again(owner, llm):
    source = five_step_run(owner)
    llm.script([fork_script()[-1]])

    forked = executed(fork(owner, source, after_step=5))

    assert forked.status == RunStatus.SUCCEEDED
    assert markers(llm) == ["VERIFY"]


def test_another_persons_run_is_not_found(owner, outsider):
    source = five_step_run(owner)

    error = refused(ErrorCode.NOT_FOUND, owner=outsider, source=source)

    assert str(source.pk) in error.message


@pytest.mark.parametrize(
    ("after_step", "field"),
    [
        (0, "after_step"),
        (-1, "after_step"),
        (6, "after_step"),
        ("three", "after_step"),
        (True, "after_step"),
        (3.0, "after_step"),
        (None, "after_step"),
    ],
)
def test_a_step_number_not_a_completed_step_is_a_validation_error(owner, after_step, field):
    source = five_step_run(owner)

    refused(ErrorCode.VALIDATION_ERROR, field, owner=owner, source=source, after_step=after_step)


def test_bad_options_are_validation_errors(owner):
    source = five_step_run(owner)

    error = refused(
        ErrorCode.VALIDATION_ERROR, "plan_version", owner=owner, source=source, plan_version=2
    )
    assert error.message == f"Run {source.pk} has no plan version 2"
    for version in ("two", 1.5, True):
        error = refused(
            ErrorCode.VALIDATION_ERROR,
            "plan_version",
            owner=owner,
            source=source,
            plan_version=version,
        )
        assert error.message == "plan_version is a whole number (null: the latest)"
    # A text, not a list of the steps' objectives (each character would be a step).
    refused(ErrorCode.VALIDATION_ERROR, "steps", owner=owner, source=source, steps="do it")
    refused(ErrorCode.VALIDATION_ERROR, "connection", owner=owner, source=source, connection=999)
    refused(ErrorCode.VALIDATION_ERROR, "steps", owner=owner, source=source, steps=["", "  "])
    refused(ErrorCode.VALIDATION_ERROR, "steps", owner=owner, source=source, steps=["x"] * 60)
    refused(ErrorCode.VALIDATION_ERROR, "instruction", owner=owner, source=source, instruction=3)
    assert not Plan.objects.exclude(run=source).exists()


def test_a_step_that_did_not_complete_is_not_forked_after(owner):
    source = five_step_run(owner)
    Step.objects.filter(run=source, index=1).update(status="failed")

    error = refused(
        ErrorCode.VALIDATION_ERROR, "after_step", owner=owner, source=source, after_step=2
    )

    assert "failed" in error.message


def test_a_run_still_working_is_a_conflict(owner):
    run = make_run(owner)

    error = refused(ErrorCode.CONFLICT, owner=owner, source=run)

    assert error.details["status"] == RunStatus.QUEUED


def test_a_journal_stopped_before_the_step_is_a_conflict(owner):
    source = five_step_run(owner)
    source.journal_complete_until = 1
    source.save(update_fields=["journal_complete_until"])

    error = refused(ErrorCode.CONFLICT, owner=owner, source=source)

    assert "journal" in error.message
    assert not os.path.exists(workspace_dir(source).parent / f"run-{source.pk + 1}")


def test_no_fork_is_made_while_the_kill_switch_is_engaged(owner, staff):
    source = five_step_run(owner)
    kill_switch_set(engaged=True, actor=staff, interface="admin", reason="incident")

    error = refused(ErrorCode.SERVICE_UNAVAILABLE, owner=owner, source=source)

    assert error.details["kill_switch"] == "engaged"
    assert Run.objects.count() == 1


def test_a_chat_answer_is_not_forked_on_its_own(owner):
    source = five_step_run(owner)
    Run.objects.filter(pk=source.pk).update(kind="chat")

    error = refused(ErrorCode.CONFLICT, owner=owner, source=source)

    assert error.message == f"Run {source.pk} is a chat answer, which is not forked on its own"


def test_a_forks_files_panel_shows_its_copied_steps_and_links_are_not_recreated(owner):
    source = run_steps(
        owner,
        [
            tool_call("disk", path="notes.txt", content="first"),
            tool_call("disk", path="shortcut", target="notes.txt"),
        ],
        [tool_call("disk", path="notes.txt", content="second")],
    )
    # As if step 1 had made it executable: the mode the journal recorded is the one rebuilt.
    WorkspaceChange.objects.filter(run=source, path="notes.txt", seq=1).update(mode=0o751)

    forked = fork(owner, source, after_step=1)

    directory = workspace_dir(forked)
    assert (directory / "notes.txt").read_text() == "first"
    assert not os.path.lexists(directory / "shortcut")
    assert forked.origin_options["not_recreated"] == ["shortcut"]
    assert os.stat(directory / "notes.txt").st_mode & 0o777 == 0o751
    # The fork's journal is the source's up to there: its Files panel after step 1 reads it.
    point = journal_point(run=forked, after_step=1)
    assert point.complete and point.seq == forked.journal_seq
    (note,) = [f for f in journal_files(run=forked, point=point) if f.kind == "write"]
    assert note.file.path == "notes.txt"


def test_a_later_step_at_work_before_the_step_ended_makes_it_a_conflict(owner):
    source = five_step_run(owner)
    third = Step.objects.get(run=source, index=2)
    # As a parallel plan's step 4 would have: started while step 3 still worked.
    Step.objects.filter(run=source, index=3).update(started_at=third.started_at)

    error = refused(ErrorCode.CONFLICT, owner=owner, source=source)

    assert error.details["in_flight"] == [4]


def test_an_earlier_step_that_ended_after_the_step_makes_it_a_conflict(owner):
    source = five_step_run(owner)
    third = Step.objects.get(run=source, index=2)
    # As a parallel plan's step 2 would have: still at work when step 3 ended, so the journal
    # cut at step 3's end holds only part of its writes.
    Step.objects.filter(run=source, index=1).update(finished_at=third.finished_at + ONE_SECOND)

    error = refused(ErrorCode.CONFLICT, owner=owner, source=source)

    assert error.details["in_flight"] == [2]
    assert error.message.startswith("Step 2 was still at work when step 3 ended")
    assert Run.objects.count() == 1


@pytest.mark.dialect
@pytest.mark.parametrize("bad", ["no\x00body", "lone \ud800 half"])
@pytest.mark.parametrize("field", ["connection", "steps", "instruction"])
def test_text_no_database_stores_is_a_validation_error_before_any_query(owner, field, bad):
    """As MCP and the page pass them: PostgreSQL refuses NUL in a query's parameter, SQLite's
    driver a lone surrogate; neither is asked."""
    source = five_step_run(owner)

    error = refused(
        ErrorCode.VALIDATION_ERROR,
        field,
        owner=owner,
        source=source,
        **{field: [bad] if field == "steps" else bad},
    )

    assert "NUL" in error.message or "surrogate" in error.message
    assert Run.objects.count() == 1
