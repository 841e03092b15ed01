"""A contract agent's statuses are one vocabulary: the REST schema and the agents' panel spell
the values of contracts.selectors.AgentStatus."""

from typing import get_args

from agents_app.api.agents.schemas import AgentStatus as AgentStatusLiteral
from agents_app.contracts.selectors import AgentStatus
from agents_app.web.agent_panel import STATUS_LABELS


def test_the_rest_schema_lists_exactly_the_agent_statuses():
    assert set(get_args(AgentStatusLiteral)) == {status.value for status in AgentStatus}


def test_the_agent_panel_has_a_label_for_every_agent_status():
    assert set(STATUS_LABELS) == set(AgentStatus)
