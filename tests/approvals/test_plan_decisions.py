"""A plan waiting for approval can be edited (a new version that runs as the person wrote it)
or rejected with feedback (the planner gets it and makes a new version, which waits again),
in-process with the scripted provider, over REST and from the run page's dialog."""

import json

import pytest

from agents_app.approvals.decisions import approval_decide
from agents_app.approvals.rules import rule_create
from agents_app.core.errors import DomainError
from agents_app.models import Approval, Plan, RunEvent
from tests.support.api import assert_error
from tests.support.approvals import HTMX, SCRIPT, decide, decide_url, drive, plan_parked
from tests.support.markup import by_id
from tests.support.script import plan_reply, step, verdict
from tools_app.models import Tool, ToolSource

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def send_is_a_known_tool():
    Tool.objects.create(name="send", source=ToolSource.BUILTIN)


@pytest.mark.dialect
def test_a_rejected_plan_is_made_again_with_the_persons_feedback_and_waits_again(
    owner, send, registry
):
    second = plan_reply(step("send Ann a short note", ["send"]))
    script = [
        {"match": ["AGENTDESK:PLAN", "too long"], "replies": [second]},
        {
            "match": "AGENTDESK:STEP 0",
            "replies": [
                {"tool_calls": [{"name": "send", "arguments": {"to": "ann", "text": "hi"}}]},
                {"content": "sent"},
            ],
        },
        *SCRIPT,
    ]
    run, provider, approval = plan_parked(owner, registry, script)
    # The calls of the plan the person approves in the end run without asking again.
    rule_create(owner_id=owner.pk, tool="send", arguments=None, actor=owner, interface="web")

    approval_decide(
        approval_id=approval.pk,
        decision="deny",
        note="Two steps is too long: one will do.",
        actor=owner,
        interface="web",
    )

    run.refresh_from_db()
    assert (run.status, run.replans) == ("planning", 0)
    drive(run, provider, registry)
    assert run.status == "waiting_approval"
    asked = json.dumps(provider.requests[-1].messages)
    assert "owner rejected plan v1: Two steps is too long: one will do." in asked
    plans = list(Plan.objects.filter(run=run).order_by("version"))
    assert [(p.version, len(p.raw["steps"])) for p in plans] == [(1, 2), (2, 1)]
    again = Approval.objects.get(run=run, status="pending")
    assert again.arguments["version"] == 2
    approval.refresh_from_db()
    assert (approval.status, approval.decision_arguments) == (
        "denied",
        {"feedback": "Two steps is too long: one will do."},
    )
    replanned = RunEvent.objects.get(run=run, type="replanned").payload
    assert replanned["by"] == "person"
    approval_decide(approval_id=again.pk, decision="approve", actor=owner, interface="web")
    drive(run, provider, registry)
    assert run.status == "succeeded" and send.calls == [{"to": "ann", "text": "hi"}]


@pytest.mark.dialect
def test_an_edited_plan_runs_as_the_person_wrote_it(owner, send, registry):
    script = [
        {"match": "AGENTDESK:STEP 0", "replies": [{"content": "checked"}]},
        {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "checked, nothing sent")]},
        *SCRIPT,
    ]
    run, provider, approval = plan_parked(owner, registry, script)
    edited = {"steps": [{"objective": "Check the address book only", "tool_names": []}]}

    approval_decide(
        approval_id=approval.pk, decision="modify", arguments=edited, actor=owner, interface="web"
    )

    run.refresh_from_db()
    assert run.status == "running"
    latest = Plan.objects.filter(run=run).order_by("-version").first()
    assert (latest.version, latest.reason) == (2, "edited by owner at its approval")
    assert [s.objective for s in latest.steps.all()] == ["Check the address book only"]
    created = RunEvent.objects.filter(run=run, type="plan_created").order_by("-seq").first()
    assert created.payload["edited_by"] == "owner"
    drive(run, provider, registry)
    assert (run.status, run.final_response) == ("succeeded", "checked, nothing sent")
    assert send.calls == []


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"steps": []}, "steps: List should have at least 1 item"),
        ({"steps": [{"objective": "x", "tool_names": ["nope"]}]}, "No such tool: nope"),
        ({"steps": [{"objective": "  "}]}, "Step 1 has no objective"),
        ({"steps": [{"objective": "a", "depends_on": [0]}]}, "earlier steps only"),
        (
            {"steps": [{"objective": "a"}, {"objective": "b", "depends_on": [1]}]},
            "Step 2 may depend on earlier steps only",
        ),
        ({"steps": "do it"}, "An edited plan is a JSON object"),
        (None, "An edited plan is a JSON object"),
    ],
)
def test_an_edit_that_is_no_plan_is_refused_and_the_plan_still_waits(
    owner, send, registry, arguments, says
):
    run, _, approval = plan_parked(owner, registry)
    with pytest.raises(DomainError) as refused:
        approval_decide(
            approval_id=approval.pk,
            decision="modify",
            arguments=arguments,
            actor=owner,
            interface="web",
        )
    assert refused.value.code == "INVALID_ARGUMENTS" and says in refused.value.message
    approval.refresh_from_db()
    assert approval.status == "pending"
    assert Plan.objects.filter(run=run).count() == 1


def test_an_edit_with_many_problems_is_refused_naming_the_first_three(owner, send, registry):
    _, _, approval = plan_parked(owner, registry)
    objectives_that_are_not_text = {"steps": [{"objective": n} for n in range(4)]}

    with pytest.raises(DomainError) as refused:
        approval_decide(
            approval_id=approval.pk,
            decision="modify",
            arguments=objectives_that_are_not_text,
            actor=owner,
            interface="web",
        )

    problems = refused.value.message.removeprefix("The edited plan is not valid: ").split("; ")
    assert [problem.split(":")[0] for problem in problems] == [
        "steps.0.objective",
        "steps.1.objective",
        "steps.2.objective",
    ]


def test_a_rejection_needs_feedback(owner, owner_api, send, registry):
    _, _, approval = plan_parked(owner, registry)
    for note in ["", "   "]:
        response = decide(owner_api, approval.pk, decision="deny", note=note)
        assert assert_error(response, 400, "VALIDATION_ERROR")["details"] == {"field": "note"}
    response = decide(owner_api, approval.pk, decision="deny", note="x" * 2001)
    assert "note" in json.dumps(assert_error(response, 400, "VALIDATION_ERROR")["details"])
    approval.refresh_from_db()
    assert approval.status == "pending"


def test_over_rest_a_plan_is_edited_or_rejected(owner, owner_api, send, registry):
    _, _, approval = plan_parked(owner, registry)
    edited = {"steps": [{"objective": "Send Ann hi", "tool_names": ["send"]}]}
    response = decide(owner_api, approval.pk, decision="modify", arguments=edited)
    assert response.status_code == 200
    assert response.json()["status"] == "modified"
    assert response.json()["decision_arguments"]["steps"][0]["objective"] == "Send Ann hi"
    _, _, second = plan_parked(owner, registry)
    response = decide(owner_api, second.pk, decision="deny", note="Ask Bo instead")
    assert (response.status_code, response.json()["status"]) == (200, "denied")
    response = decide(owner_api, second.pk, decision="deny", note="again")
    assert_error(response, 409, "CONFLICT")


def test_the_plan_dialog_offers_edit_and_reject_and_keeps_refused_feedback(
    owner, owner_session, send, registry
):
    run, _, approval = plan_parked(owner, registry)
    page = owner_session.get(f"/runs/{run.pk}/").content.decode()
    assert by_id(page, "approval-note")["name"] == "note"
    editable = json.loads(
        page.split('id="approval-arguments"')[1]
        .split(">", 1)[1]
        .split("</textarea>")[0]
        .replace("&quot;", '"')
    )
    assert [s["objective"] for s in editable["steps"]] == ["send the note", "wrap up"]

    response = owner_session.post(
        decide_url(approval), {"decision": "deny", "note": ""}, headers=HTMX
    )
    assert response.status_code == 400
    assert "Say what is wrong with the plan" in response.content.decode()

    response = owner_session.post(
        decide_url(approval), {"decision": "deny", "note": "Only one step"}, headers=HTMX
    )
    assert response.status_code == 200
    run.refresh_from_db()
    assert run.status == "planning"
