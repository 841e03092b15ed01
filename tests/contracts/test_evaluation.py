"""A contract cycle's evaluation event (contracts.recipe): the model's reasoning, when it gave
some, is recorded with the verdict; an evaluation without reasoning records none."""

import pytest

from agents_app.contracts.services import agent_create, agent_start
from agents_app.models import RunEvent
from agents_app.worker.execution import execute_run
from tests.support.script import json_reply, tool_call
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import EchoTool, make_registry

pytestmark = pytest.mark.django_db(transaction=True)


def evaluation(met: bool, reason: str, *evidence: int, **reply) -> dict:
    return {**json_reply({"met": met, "reason": reason, "evidence": list(evidence)}), **reply}


@pytest.fixture
def started(owner, llm, settings, tmp_path):
    """A contract agent's first attempt, started (`llm`: the connection it is started with;
    its replies come from the test's provider)."""
    settings.AGENT_LOG_DIR = tmp_path / "logs"

    def start(contract: str):
        agent = agent_create(owner=owner, interface="api", contract=contract)
        return agent_start(agent=agent, actor=owner, interface="api")

    return start


def test_an_evaluations_reasoning_is_recorded_with_it_and_none_when_it_gave_none(started):
    run = started("Echo a then b.")
    provider = ScriptedProvider(
        [
            {
                "match": "AGENTDESK:EVALUATE",
                "replies": [
                    evaluation(False, "b is not echoed yet", reasoning="Only a was echoed."),
                    evaluation(True, "a and b were echoed", 1, 2),
                ],
            },
            {
                "match": "AGENTDESK:CONTRACT",
                "replies": [tool_call("echo", text="a"), tool_call("echo", text="b")],
            },
        ]
    )

    execute_run(run.pk, provider=provider, registry=make_registry(EchoTool()))

    evaluations = RunEvent.objects.filter(run=run, type="contract_evaluation").order_by("seq")
    assert [(e.payload["met"], e.payload.get("thinking")) for e in evaluations] == [
        (False, "Only a was echoed."),
        (True, None),
    ]
    assert "thinking" not in evaluations[1].payload


class Watched(ScriptedProvider):
    """Notes, for each request, whether a database transaction was open meanwhile."""

    def __init__(self, script):
        super().__init__(script)
        self.in_transaction: list[bool] = []

    def complete(self, request):
        from django.db import connection

        self.in_transaction.append(connection.in_atomic_block)
        return super().complete(request)


def test_a_cycles_evaluation_asks_the_model_with_no_transaction_open(started):
    # The cycle's step ends in its own commit; the evaluation, a model call, comes after it
    # (a contract's verdict is not derived from its step: recipe.verdict_at_step_end).
    run = started("Echo a.")
    provider = Watched(
        [
            {"match": "AGENTDESK:EVALUATE", "replies": [evaluation(True, "a was echoed", 1)]},
            {"match": "AGENTDESK:CONTRACT", "replies": [tool_call("echo", text="a")]},
        ]
    )

    execute_run(run.pk, provider=provider, registry=make_registry(EchoTool()))

    run.refresh_from_db()
    assert run.status == "succeeded"
    assert len(provider.in_transaction) >= 2 and not any(provider.in_transaction)
