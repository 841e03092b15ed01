"""What became of a message sent is one vocabulary: the REST and MCP schemas spell the values
of conversations.outcomes.MessageOutcome, and the mode decides it as the service says."""

from typing import get_args

import pytest

from agents_app.api.conversations.mcp import MessageSent
from agents_app.api.conversations.schemas import MessagePosted
from agents_app.conversations.outcomes import MessageOutcome, message_outcome_of
from agents_app.models import DoubleTexting


@pytest.mark.parametrize("schema", [MessagePosted, MessageSent])
def test_the_api_schemas_list_exactly_the_message_outcomes(schema):
    literal = schema.model_fields["outcome"].annotation
    assert set(get_args(literal)) == {outcome.value for outcome in MessageOutcome}


@pytest.mark.parametrize(
    ("mode", "answered", "outcome"),
    [
        (DoubleTexting.STEER, False, "steered"),
        (DoubleTexting.ENQUEUE, False, "queued"),
        (DoubleTexting.INTERRUPT, False, "queued"),
        (DoubleTexting.STEER, True, "answered"),
    ],
)
def test_a_message_waits_steered_only_in_steer_mode(mode, answered, outcome):
    assert message_outcome_of(mode=mode, answered=answered) == outcome
