"""A failed run names its root cause (issue 32, finding 5): a call that failed, then a verifier
that judged the task incomplete, give the headline "The call of … failed: … — the verifier
judged the task incomplete", and the cause alone travels as `cause` over REST (and in the
run.finished webhook: tests/webhooks/test_delivery.py)."""

import pytest

from agents_app.models import Run
from agents_app.worker.execution import execute_run
from tests.support.runs import make_run
from tests.support.script import plan_reply, step, tool_call, verdict
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import BrokenTool, EchoTool, make_registry

pytestmark = pytest.mark.django_db(transaction=True)

STEP_CAUSE = "Step 1 failed: TOOL_FAILED: broken: the service said no"
CALL_CAUSE = "The call of broken (step 1) failed: the service said no"


def fetch_that_fails():
    """A step whose first call fails; the model then echoes, and answers (when its step lets
    it go on past a failed call), and the verifier judges the task incomplete."""
    return ScriptedProvider(
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [plan_reply(step("fetch it", ["broken", "echo"]))],
            },
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [tool_call("broken"), tool_call("echo", text="x"), {"content": "Done."}],
            },
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(complete=False)]},
        ]
    )


@pytest.mark.parametrize(("retries", "cause"), [(0, STEP_CAUSE), (2, CALL_CAUSE)])
def test_a_failed_step_or_call_is_the_headline_of_a_run_the_verifier_failed(
    owner, owner_api, owner_session, settings, retries, cause
):
    # With retries the model hears the error and the step completes: the call is the cause.
    settings.AGENT_TOOL_ERROR_RETRIES = retries
    run = make_run(owner, "Fetch the page and tell me its title")

    execute_run(
        run.pk, provider=fetch_that_fails(), registry=make_registry(BrokenTool(), EchoTool())
    )

    run = Run.objects.get(pk=run.pk)
    assert (run.status, run.error_code) == ("failed", "VERIFICATION_FAILED")
    assert run.error_cause == cause
    assert run.error_message == f"{cause} — the verifier judged the task incomplete"
    body = owner_api.get(f"/api/v1/runs/{run.pk}").json()
    assert (body["cause"], body["error_message"]) == (cause, run.error_message)
    listed = owner_api.get("/api/v1/runs").json()["results"]
    assert [r["cause"] for r in listed] == [cause]
    page = owner_session.get(f"/runs/{run.pk}/").content.decode()
    assert cause in page


def test_a_run_that_succeeded_has_no_cause(owner, owner_api):
    run = make_run(owner, "Say hi")
    provider = ScriptedProvider(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("say hi"))]},
            {"match": "AGENTDESK:STEP 0", "replies": [{"content": "Hi."}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict()]},
        ]
    )

    execute_run(run.pk, provider=provider, registry=make_registry())

    assert owner_api.get(f"/api/v1/runs/{run.pk}").json()["cause"] == ""
