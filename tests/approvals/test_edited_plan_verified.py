"""A plan a person edited is the task as they reshaped it: the verifier reads their steps and
note as the task (the first wording after them), and the evidence check asks for the files
their steps write, not the ones the first wording asked for (issue 32, finding 6)."""

import json

import pytest

from agents_app.approvals.decisions import approval_decide
from agents_app.core.errors import DomainError
from agents_app.engine.evidence import CallRecord
from agents_app.engine.plan_edits import PlanEdit
from agents_app.engine.prompts import verify_messages
from agents_app.models import Approval, Plan, Task
from agents_app.runs.evidence import evidence_problem, plan_edit
from agents_app.runs.lifecycle import workspace_for
from agents_app.runs.services import run_create
from tests.support.approvals import drive
from tests.support.script import plan_reply, step, tool_call, verdict
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import FinishTool, make_registry
from tools_app.builtin.files import ReadFileTool, WriteFileTool
from tools_app.models import Tool, ToolSource

pytestmark = pytest.mark.django_db(transaction=True)

TASK = "Read notes.txt and write its summary to summary.md"
EDITED = {"steps": [{"objective": "Write hello to hello.txt", "tool_names": ["write_file"]}]}
NOTE = "Skip the notes: just write hello."


@pytest.fixture
def registry():
    for name in ("read_file", "write_file"):
        Tool.objects.get_or_create(name=name, defaults={"source": ToolSource.BUILTIN})
    return make_registry(
        ReadFileTool(max_bytes=10_000), WriteFileTool(max_bytes=10_000), FinishTool()
    )


def _verifier_asks_for_the_reshaped_task(request):
    """The verifier's answer: complete only when it is shown the task as the person reshaped
    it (the real one says "No successful call of read_file" when shown the first wording)."""
    asked = request.messages[-1]["content"]
    reshaped = asked.startswith("Task: Write hello to hello.txt.")
    return verdict(reshaped, "hello.txt holds hello", evidence=[1] if reshaped else [])


SCRIPT = [
    {
        "match": "AGENTDESK:PLAN",
        "replies": [
            plan_reply(
                step("Read notes.txt", ["read_file"]),
                step("Write the summary to summary.md", ["write_file"], [0]),
            )
        ],
    },
    {
        "match": "AGENTDESK:STEP 0",
        "replies": [
            tool_call("write_file", path="hello.txt", content="hello"),
            {"content": "wrote hello.txt"},
        ],
    },
    {"match": "AGENTDESK:VERIFY", "replies": [_verifier_asks_for_the_reshaped_task]},
]


def _parked(owner, registry):
    run = run_create(task=Task.objects.create(owner=owner, text=TASK, approve_plan=True))
    provider = ScriptedProvider(SCRIPT)
    drive(run, provider, registry)
    assert run.status == "waiting_approval"
    return run, provider, Approval.objects.get(run=run, status="pending")


def test_a_plan_edited_down_to_one_write_succeeds_judged_as_the_person_reshaped_it(owner, registry):
    run, provider, approval = _parked(owner, registry)

    approval_decide(
        approval_id=approval.pk,
        decision="modify",
        arguments=EDITED,
        note=NOTE,
        actor=owner,
        interface="web",
    )
    drive(run, provider, registry)

    judged = provider.requests[-1].messages[-1]["content"]
    assert (run.status, run.error_message) == ("succeeded", ""), judged
    assert run.final_response == "hello.txt holds hello"
    judged = provider.requests[-1].messages[-1]["content"]
    assert judged.startswith("Task: Write hello to hello.txt.\n\nWhat was done:")
    assert f"Their note: {NOTE}" in judged
    assert "owner reshaped it when they edited the plan at its approval (plan v2)" in judged
    assert f"What was first asked: {TASK}" in judged
    # The step was told the same task.
    stepped = next(r for r in provider.requests if "AGENTDESK:STEP" in str(r.messages[0]))
    assert "Task: Write hello to hello.txt." in stepped.messages[0]["content"]
    assert TASK not in stepped.messages[0]["content"]


def test_the_edit_and_its_note_are_kept_with_the_plan_version(owner, registry):
    run, _, approval = _parked(owner, registry)

    approval_decide(
        approval_id=approval.pk,
        decision="modify",
        arguments=EDITED,
        note=NOTE,
        actor=owner,
        interface="web",
    )

    latest = Plan.objects.get(run=run, version=2)
    assert latest.reason == f"edited by owner at its approval: {NOTE}"
    assert latest.raw["edited"] == {"by": "owner", "note": NOTE}
    approval.refresh_from_db()
    assert approval.decision_arguments["note"] == NOTE
    assert plan_edit(run) == PlanEdit(
        version=2, by="owner", note=NOTE, steps=(("Write hello to hello.txt", ("write_file",)),)
    )


def test_an_edit_s_note_is_text_of_at_most_2000_characters(owner, registry):
    _, _, approval = _parked(owner, registry)
    with pytest.raises(DomainError) as refused:
        approval_decide(
            approval_id=approval.pk,
            decision="modify",
            arguments=EDITED,
            note="x" * 2001,
            actor=owner,
            interface="web",
        )
    assert refused.value.details["field"] == "note"


def test_the_evidence_check_asks_for_the_files_of_the_edited_plan_not_the_first_wording(
    owner, registry
):
    run, _, approval = _parked(owner, registry)
    approval_decide(
        approval_id=approval.pk, decision="modify", arguments=EDITED, actor=owner, interface="web"
    )
    edit = plan_edit(run)

    problem = evidence_problem(run, edit=edit)
    assert problem is not None and problem.details["missing"] == ["hello.txt"]
    assert problem.message.startswith("The task as owner reshaped it asks for hello.txt")
    (workspace_for(run) / "hello.txt").write_text("hello")
    assert evidence_problem(run, edit=edit) is None
    # Unedited, the first wording's file is still asked for.
    assert evidence_problem(run).details["missing"] == ["summary.md"]


def test_a_run_whose_plan_nobody_edited_has_no_edit(owner, registry):
    run, _, approval = _parked(owner, registry)
    approval_decide(approval_id=approval.pk, decision="approve", actor=owner, interface="web")
    assert plan_edit(run) is None


def test_the_verifier_reads_the_first_wording_as_the_task_when_nothing_was_edited():
    call = CallRecord(1, 0, "write_file", {"path": "a.txt"}, True, "{}")
    messages = verify_messages(
        task=TASK,
        context={},
        steps=[(0, "Write", "completed", "ok")],
        can_replan=False,
        calls=[call],
    )
    assert messages[1]["content"].startswith(f"Task: {TASK}\n\nWhat was done:")
    assert "About the task" not in json.dumps(messages)


def test_a_replan_after_an_edit_plans_for_the_task_as_the_person_reshaped_it(owner, registry):
    script = [
        {
            "match": ["AGENTDESK:PLAN", "reshaped the task"],
            "replies": [plan_reply(step("Write hello to hello.txt again", ["write_file"]))],
        },
        {
            "match": "AGENTDESK:STEP 0",
            "replies": [
                tool_call("write_file", path="hello.txt", content="hello"),
                {"content": "wrote hello.txt"},
                tool_call("write_file", path="hello.txt", content="hello"),
                {"content": "wrote hello.txt again"},
            ],
        },
        {
            "match": "AGENTDESK:VERIFY",
            "replies": [verdict(False, replan=True), verdict(True, "hello", evidence=[2])],
        },
        *SCRIPT,
    ]
    run = run_create(task=Task.objects.create(owner=owner, text=TASK, approve_plan=True))
    provider = ScriptedProvider(script)
    drive(run, provider, registry)
    approval = Approval.objects.get(run=run, status="pending")
    approval_decide(
        approval_id=approval.pk,
        decision="modify",
        arguments=EDITED,
        note=NOTE,
        actor=owner,
        interface="web",
    )

    drive(run, provider, registry)
    # The new plan waits for the person, as every plan of this task does.
    again = Approval.objects.get(run=run, status="pending")
    approval_decide(approval_id=again.pk, decision="approve", actor=owner, interface="web")
    drive(run, provider, registry)

    assert (run.status, run.replans) == ("succeeded", 1)
    planned = [
        r.messages[-1]["content"] for r in provider.requests if "AGENTDESK:PLAN" in str(r.messages)
    ][-1]
    assert "owner reshaped the task when they edited plan v2 at its approval" in planned
    assert f"Their note: {NOTE}" in planned and "1. Write hello to hello.txt" in planned
