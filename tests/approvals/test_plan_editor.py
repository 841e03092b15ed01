"""The plan editor of a plan's approval dialog is a form: a row per step (objective, tools, the
steps it needs by their numbers from 1), with add, remove and move up or down done on the
server, over htmx or a plain POST; it decides through the same service as REST and MCP, and
the raw JSON stays as an option (issue 32, finding 6)."""

import json

import pytest

from agents_app.models import Approval, Plan
from agents_app.web.plan_editor import StepRow, operate
from tests.support.approvals import HTMX, decide_url, plan_parked
from tests.support.markup import elements
from tools_app.models import Tool, ToolSource

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def send_is_a_known_tool():
    Tool.objects.create(name="send", source=ToolSource.BUILTIN)


def edit_url(approval) -> str:
    return f"/approvals/{approval.pk}/plan/"


def rows(*steps, **more):
    """The editor's fields for `steps` as (objective, tools, needs)."""
    data = {"step-TOTAL_FORMS": str(len(steps)), "step-INITIAL_FORMS": str(len(steps))}
    for i, (objective, tools, needs) in enumerate(steps):
        data |= {
            f"step-{i}-objective": objective,
            f"step-{i}-tool_names": list(tools),
            f"step-{i}-depends_on": needs,
        }
    return data | more


def fields(html: str) -> dict[str, str]:
    """The editor's text fields by name, as the page fills them."""
    return {
        attrs["name"]: attrs.get("value") or ""
        for tag, attrs in elements(html)
        if tag == "input" and (attrs.get("name") or "").startswith("step-")
    }


def objectives(html: str) -> list[str]:
    found = fields(html)
    return [found[f"step-{i}-objective"] for i in range(int(found["step-TOTAL_FORMS"]))]


def test_the_dialog_edits_the_steps_in_a_form_with_dependencies_numbered_from_1(
    owner, owner_session, send, registry
):
    run, _, _ = plan_parked(owner, registry)

    html = owner_session.get(f"/runs/{run.pk}/").content.decode()

    found = fields(html)
    assert objectives(html) == ["send the note", "wrap up"]
    # "wrap up" needs the first step: depends_on [0] in the plan, step 1 on the page.
    assert (found["step-0-depends_on"], found["step-1-depends_on"]) == ("", "1")
    assert '<option value="send" selected>send</option>' in html
    assert 'name="plan_edit" value="add"' in html
    assert 'name="plan_edit" value="up:1"' in html and 'name="plan_edit" value="remove:0"' in html
    assert "Edit as raw JSON instead" in html


def test_the_edited_form_runs_as_the_person_wrote_it_through_the_same_service(
    owner, owner_session, send, registry
):
    run, _, approval = plan_parked(owner, registry)
    body = rows(
        ("Send Ann hi", ["send"], ""),
        ("Say it is done", [], "1"),
        decision="modify",
        edit_note="One note is enough",
        arguments="not JSON: the form was used, not this box",
    )

    response = owner_session.post(decide_url(approval), body, headers=HTMX)

    assert response.status_code == 200
    approval.refresh_from_db()
    assert approval.status == "modified"
    latest = Plan.objects.get(run=run, version=2)
    assert [(s["objective"], s["tool_names"], s["depends_on"]) for s in latest.raw["steps"]] == [
        ("Send Ann hi", ["send"], []),
        ("Say it is done", [], [0]),
    ]
    assert latest.raw["edited"] == {"by": "owner", "note": "One note is enough"}


@pytest.mark.parametrize(
    ("needs", "says"),
    [
        ("2", "Step 2 may depend on earlier steps only"),
        ("first", "Step 2: the steps it needs are step numbers, like 1, 2"),
    ],
)
def test_a_refused_edit_keeps_the_rows_as_typed_and_says_which_step(
    owner, owner_session, send, registry, needs, says
):
    _, _, approval = plan_parked(owner, registry)
    body = rows(("Send Ann hi", ["send"], ""), ("Then this", [], needs), decision="modify")

    response = owner_session.post(decide_url(approval), body, headers=HTMX)

    assert response.status_code == 400
    html = response.content.decode()
    assert says in html
    assert objectives(html) == ["Send Ann hi", "Then this"]
    assert fields(html)["step-1-depends_on"] == needs
    approval.refresh_from_db()
    assert approval.status == "pending"


def test_steps_are_added_removed_and_moved_without_deciding(owner, owner_session, send, registry):
    _, _, approval = plan_parked(owner, registry)
    two = [("send the note", ["send"], ""), ("wrap up", [], "1")]

    added = owner_session.post(edit_url(approval), rows(*two, plan_edit="add"), headers=HTMX)
    assert objectives(added.content.decode()) == ["send the note", "wrap up", ""]

    moved = owner_session.post(edit_url(approval), rows(*two, plan_edit="up:1"), headers=HTMX)
    html = moved.content.decode()
    assert objectives(html) == ["wrap up", "send the note"]
    # Its dependency follows the step it names, now step 2.
    assert fields(html)["step-0-depends_on"] == "2"

    removed = owner_session.post(edit_url(approval), rows(*two, plan_edit="remove:0"), headers=HTMX)
    html = removed.content.decode()
    assert objectives(html) == ["wrap up"]
    assert fields(html)["step-0-depends_on"] == ""
    assert Approval.objects.get(pk=approval.pk).status == "pending"


def test_without_htmx_an_edit_of_the_rows_renders_the_run_page_again(
    owner, owner_session, send, registry
):
    run, _, approval = plan_parked(owner, registry)

    response = owner_session.post(
        edit_url(approval), rows(("only step", ["send"], ""), plan_edit="add")
    )

    assert response.status_code == 200
    html = response.content.decode()
    assert f"Run #{run.pk}" in html or 'id="run-meta"' in html
    assert objectives(html) == ["only step", ""]


def test_the_raw_json_is_still_an_option(owner, owner_session, send, registry):
    run, _, approval = plan_parked(owner, registry)
    edited = {"steps": [{"objective": "Send Ann hi from JSON", "tool_names": ["send"]}]}
    body = rows(("from the form", [], ""), decision="modify", arguments=json.dumps(edited))

    response = owner_session.post(f"{decide_url(approval)}?editor=json", body, headers=HTMX)

    assert response.status_code == 200
    latest = Plan.objects.get(run=run, version=2)
    assert [s["objective"] for s in latest.raw["steps"]] == ["Send Ann hi from JSON"]


def test_someone_else_s_plan_cannot_be_edited(outsider_session, owner, send, registry):
    _, _, approval = plan_parked(owner, registry)
    response = outsider_session.post(edit_url(approval), rows(plan_edit="add"), headers=HTMX)
    assert response.status_code == 404


def test_moving_down_renumbers_every_dependency():
    three = [StepRow("a"), StepRow("b", depends_on="1"), StepRow("c", depends_on="1, 2")]

    moved = operate(three, "down:0")

    assert [(row.objective, row.depends_on) for row in moved] == [
        ("b", "2"),
        ("a", ""),
        ("c", "2, 1"),
    ]
    assert operate(three, "down:2") == three  # the last step stays last
    assert operate(three, "sideways:1") == three
