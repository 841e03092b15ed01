"""Text a model sends that cannot be stored as it is (a lone surrogate, such as JSON's
"\\udcff", or NUL) does not break a run: a tool call whose arguments hold it fails as that
call's error and the run goes on; answer text holding it is kept with U+FFFD in its place.
The run executes in the test's process against the scripted LLM server, over the wire."""

import pytest

from agents_app.models import Step, ToolCall
from agents_app.worker.execution import execute_run
from tests.support.runs import make_run
from tests.support.script import plan_reply, step, tool_call, verdict
from tests.support.workspaces import own_workspaces

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("own_workspaces")]
__all__ = ["own_workspaces"]

BAD_PATH = "bad\udcff.md"


def write_script(first_call, answer="wrote good.md"):
    return [
        {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("write it", ["write_file"]))]},
        {
            "match": "AGENTDESK:STEP 0",
            "replies": [
                first_call,
                tool_call("write_file", path="good.md", content="fine\n"),
                {"content": answer},
            ],
        },
        {
            "match": "AGENTDESK:VERIFY",
            "replies": [verdict(True, "good.md is written", evidence=[2])],
        },
    ]


@pytest.fixture
def one_correction(settings):
    settings.AGENT_TOOL_ERROR_RETRIES = 1


@pytest.mark.dialect
@pytest.mark.usefixtures("one_correction")
def test_a_tool_call_whose_path_holds_a_lone_surrogate_fails_and_the_run_goes_on(
    llm, owner, owner_session, owner_api
):
    llm.script(write_script(tool_call("write_file", path=BAD_PATH, content="x")))
    run = make_run(owner, "write good.md")

    execute_run(run.pk)

    run.refresh_from_db()
    assert run.status == "succeeded", (run.error_code, run.error_message)
    bad, good = ToolCall.objects.filter(run=run).order_by("pk")
    assert (bad.status, good.status) == ("failed", "succeeded")
    assert "lone surrogate" in bad.error and "path" in bad.error
    assert bad.arguments == {"path": "bad\ufffd.md", "content": "x"}
    # The model was told, and corrected its call.
    told = [b for b in llm.requests if "lone surrogate" in str(b["messages"])]
    assert told
    assert owner_session.get(f"/runs/{run.pk}/").status_code == 200
    assert owner_api.get(f"/api/v1/runs/{run.pk}").status_code == 200
    assert owner_api.get(f"/api/v1/runs/{run.pk}/events").status_code == 200


@pytest.mark.dialect
@pytest.mark.usefixtures("one_correction")
def test_a_tool_call_with_a_lone_surrogate_in_a_key_fails_the_same_way(llm, owner):
    llm.script(
        write_script({"tool_calls": [{"name": "write_file", "arguments": '{"pa\\udcffth": "x"}'}]})
    )
    run = make_run(owner, "write good.md")

    execute_run(run.pk)

    run.refresh_from_db()
    assert run.status == "succeeded", (run.error_code, run.error_message)
    bad = ToolCall.objects.filter(run=run).order_by("pk").first()
    assert bad.status == "failed" and "lone surrogate" in bad.error


@pytest.mark.dialect
def test_an_answer_holding_a_lone_surrogate_or_nul_is_stored_with_a_replacement_character(
    llm, owner, owner_session, owner_api
):
    llm.script(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("answer"))]},
            {"match": "AGENTDESK:STEP 0", "replies": [{"content": "caf\udce9 and \x00 here"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "r\udce9sum\x00\u00e9")]},
        ]
    )
    run = make_run(owner, "say something")

    execute_run(run.pk)

    run.refresh_from_db()
    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert Step.objects.get(run=run).output == "caf\ufffd and \ufffd here"
    assert run.final_response == "r\ufffdsum\ufffd\u00e9"
    assert owner_session.get(f"/runs/{run.pk}/").status_code == 200
    assert owner_api.get(f"/api/v1/runs/{run.pk}").status_code == 200
