"""A contract agent's statuses are one vocabulary: the REST schema and the agents' panel spell
the values of contracts.selectors.AgentStatus, and every status has the one label the tab and
the log file both say."""

from typing import get_args

from agents_app.api.agents.schemas import AgentStatus as AgentStatusLiteral
from agents_app.contracts.selectors import STATUS_LABELS, AgentStatus


def test_the_rest_schema_lists_exactly_the_agent_statuses():
    assert set(get_args(AgentStatusLiteral)) == {status.value for status in AgentStatus}


def test_the_agent_panel_has_a_label_for_every_agent_status():
    assert set(STATUS_LABELS) == set(AgentStatus)
