"""The statuses of a run and of a step, as plain Python: the one definition of each.

The engine decides on them without Django; the models build their `TextChoices` from these
(`agents_app.models.runs`), so the column's choices and the engine's vocabulary cannot drift
apart. They live here rather than in `agents_app.core` because the models are the bottom layer
and may not import core, while the engine may not import the models.
"""

from enum import StrEnum


class RunStatus(StrEnum):
    QUEUED = "queued"
    PLANNING = "planning"
    RUNNING = "running"
    VERIFYING = "verifying"
    # Parked by the kill switch at a step boundary; its release resumes it where it was.
    PAUSED = "paused"
    # Parked on a person's decision (an Approval); the decision queues it again.
    WAITING_APPROVAL = "waiting_approval"
    # Parked while its child runs work (a team's head node, a step's micro agent); the child
    # whose end lets it go on queues it again.
    WAITING_CHILDREN = "waiting_children"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


class StepStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    SKIPPED = "skipped"
    TIMEOUT = "timeout"
    # Its run was cancelled (a person's Cancel or Stop) while it ran or waited for a person.
    CANCELLED = "cancelled"
