"""What became of a message a person sent (the double-texting outcome): REST, MCP and the
audit row's details all say it with these values."""

from enum import StrEnum

from agents_app.models import DoubleTexting


class MessageOutcome(StrEnum):
    """The API schemas' `outcome` literals spell the same values (a test checks)."""

    ANSWERED = "answered"  # an answer started for it now
    STEERED = "steered"  # it waits to be delivered into the running answer at its next step
    QUEUED = "queued"  # it waits for the running answer to end


def message_outcome_of(*, mode: str, answered: bool) -> MessageOutcome:
    """The outcome of a message sent with `mode` (DoubleTexting), `answered` when an answer
    started for it now."""
    if answered:
        return MessageOutcome.ANSWERED
    return MessageOutcome.STEERED if mode == DoubleTexting.STEER else MessageOutcome.QUEUED
