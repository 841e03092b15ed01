"""The RunEvent vocabulary (`EventType`) and publishing committed RunEvents to the channel
layer. Nothing else talks to it."""

import hashlib
from enum import StrEnum
from typing import Any

from agents_app.core.publisher import PUBLISHER


class EventType(StrEnum):
    """What a RunEvent records. Members equal their values: the `type` column, the API's
    `type` field, the SSE `event:` line and what the pages' scripts switch on."""

    # the run
    RUN_QUEUED = "run_queued"
    RUN_STATUS = "run_status"
    CANCEL_REQUESTED = "cancel_requested"
    PROGRESS_UPDATE = "progress_update"
    # planning
    TASK_ANALYSIS = "task_analysis"
    PLAN_CREATED = "plan_created"
    REPLANNED = "replanned"
    # steps and their tool calls
    STEP_STARTED = "step_started"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    STEP_COMPLETED = "step_completed"
    STEP_FAILED = "step_failed"
    STEP_SKIPPED = "step_skipped"
    LLM_USAGE = "llm_usage"
    LLM_RETRY = "llm_retry"
    # a person in the loop
    APPROVAL_REQUIRED = "approval_required"
    APPROVAL_DECIDED = "approval_decided"
    MESSAGE_STEERED = "message_steered"  # a chat answer took a person's message mid-answer
    CONTRACT_EVALUATION = "contract_evaluation"  # a contract agent judged its work
    LOG_FAILED = "log_failed"  # an agent's log file could not be written
    # a team: the head node's children
    CHILD_STARTED = "child_started"  # a subtask went to a child run
    CHILD_FINISHED = "child_finished"  # a child ended; its envelope
    CHILD_RETRIED = "child_retried"  # a failed child tried again (seed 001's recovery table)
    SUBTASK_QUEUED = "subtask_queued"  # every profile that suits it is at its limit
    DELEGATION_REFUSED = "delegation_refused"  # a guard refused it
    DECOMPOSITION_REFUSED = "decomposition_refused"  # the split was no split (placeholders)
    ENVELOPES_TRIMMED = "envelopes_trimmed"  # the children's results were cut to fit
    # a replay: where it parted from its source (engine.replay.DivergenceKind says how)
    REPLAY_DIVERGED = "replay_diverged"
    # the end
    VERIFICATION = "verification"
    ERROR = "error"
    RESULT = "result"


def run_group(run_id: int) -> str:
    return f"run.{run_id}"


def event_message(event: Any) -> dict[str, Any]:
    return {
        "type": "run.event",
        "run_id": event.run_id,
        "seq": event.seq,
        "event_type": event.type,
        "payload": event.payload,
        "created_at": event.created_at.isoformat(),
    }


def publish(group: str, messages: list[dict[str, Any]]) -> None:
    """Hand `messages` to this process's sender (core.publisher) and return at once. Best
    effort: the database already holds every event, and clients catch up by seq, so a Redis
    hiccup here must not fail or slow the run."""
    PUBLISHER.submit([(group, message) for message in messages])


def user_group(user_id: int) -> str:
    return f"user.{user_id}"


# Streams follow their credentials: every socket and SSE stream also joins the group of the
# credential it was opened with, and when that credential ends (a key revoked or deleted, a
# session logged out) one message to the group closes them all, in every web process.
CREDENTIAL_CLOSED = "credential.closed"


def api_key_group(key_hash: str) -> str:
    """The streams opened with one API key, named by (a prefix of) its stored SHA-256: the
    raw key never becomes a Redis key, and no lookup is needed to name the group."""
    return f"key.{key_hash[:32]}"


def session_group(session_key: str) -> str:
    """The sockets and streams of one login session, named by a digest of its key (the key
    itself is a credential: it is never written to Redis)."""
    return f"session.{hashlib.sha256(session_key.encode()).hexdigest()[:32]}"


def publish_credential_closed(group: str, reason: str) -> None:
    """Tell every stream opened with the credential `group` names to close (4401)."""
    PUBLISHER.submit([(group, {"type": CREDENTIAL_CLOSED, "reason": reason})])


# Events that change what a run looks like in a list of runs (the dashboard).
LISTED_EVENT_TYPES = frozenset(
    {EventType.RUN_QUEUED, EventType.RUN_STATUS, EventType.PROGRESS_UPDATE}
)
# Of those, the ones that change a run's status (and so maybe what waits for its owner).
STATUS_EVENT_TYPES = frozenset({EventType.RUN_QUEUED, EventType.RUN_STATUS})


def tree_group(root_id: int) -> str:
    """Where the pages showing a team's tree hear that it changed (the head node's and every
    child's run page). Not `run.<id>`: that group carries one run's numbered events, which its
    API socket and SSE stream read in order."""
    return f"tree.{root_id}"


# Events after which a tree of runs looks different: a run of it changed status or was
# queued, a child started or ended (and with it a message was added to the timeline).
TREE_EVENT_TYPES = frozenset(
    {
        EventType.RUN_QUEUED,
        EventType.RUN_STATUS,
        EventType.CHILD_STARTED,
        EventType.CHILD_FINISHED,
        EventType.SUBTASK_QUEUED,
        EventType.DELEGATION_REFUSED,
    }
)


def events_message(run_id: int, events: list[Any]) -> dict[str, Any]:
    """One commit's events as one channel-layer message (`run.events`), in seq order."""
    return {"type": "run.events", "run_id": run_id, "events": [event_message(e) for e in events]}


def publish_events(run: Any, events: list[Any], *, tree_root_id: int | None = None) -> None:
    """What one commit of `run` tells the pages: its events in one message, and a notice for
    its tree and its owner's lists when they look different now, handed over as one unit.
    `tree_root_id`: the head of the tree the run belongs to (None: in no tree), as the
    writer's recipe tells it (runs.writer)."""
    sends = [(run_group(run.pk), events_message(run.pk, events))]
    # A run of a tree: one small notice for the whole commit; pages read the tree from the
    # tables.
    root_id = tree_root_id
    if root_id is not None and any(e.type in TREE_EVENT_TYPES for e in events):
        sends.append(
            (tree_group(root_id), {"type": "run.tree", "root_id": root_id, "run_id": run.pk})
        )
    if any(e.type in LISTED_EVENT_TYPES for e in events):
        status_changed = any(e.type in STATUS_EVENT_TYPES for e in events)
        sends.append(
            (
                user_group(run.owner_id),
                {"type": "run.changed", "run_id": run.pk, "status_changed": status_changed},
            )
        )
    PUBLISHER.submit(sends)
