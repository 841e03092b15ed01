"""A micro agent (seed 003) in a team run driven through the database in this process: its
`max_steps` bounds its model turns."""

import pytest

from agents_app.models import Run
from tests.support.script import messages_text, tool_call
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import EchoTool, FinishTool, make_registry

from .test_team_engine import deliver, split, sub, team_run

pytestmark = pytest.mark.django_db(transaction=True)

PERSONA = "You are a tireless echoer."


def test_a_micro_agent_that_never_finishes_is_stopped_at_its_max_steps(
    owner, seeded_profiles, queued_runs, settings
):
    settings.AGENT_MAX_TOOL_ROUNDS = 6  # a step's bound when it has none of its own
    registry = make_registry(EchoTool(), FinishTool())
    micro = {"persona": PERSONA, "max_steps": 2}
    provider = ScriptedProvider(
        [
            {
                "match": "AGENTDESK:TEAM",
                "replies": [split("parallel", sub("Echo the words", micro=micro))],
            },
            {
                "match": PERSONA,
                "replies": [tool_call("echo", text=f"word {n}") for n in range(1, 13)],
            },
        ]
    )
    head = deliver(team_run(owner).pk, provider, registry)
    (child,) = Run.objects.filter(parent=head)

    child = deliver(child.pk, provider, registry)

    turns = [r for r in provider.requests if PERSONA in messages_text(r.messages)]
    assert len(turns) == 2
    assert (child.status, child.error_code) == ("failed", "MAX_RETRIES_EXCEEDED")
    assert "within 2 model turns" in child.error_message
