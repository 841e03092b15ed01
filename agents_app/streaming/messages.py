"""The `type` of every JSON message the sockets exchange with their clients (the pages' scripts
and mobile clients), and the event names of a run's Server-Sent Events besides its events'
types. A channel layer message's `type` names a consumer's handler instead (`run.events` →
`run_events`): those are spelled where they are published."""

from enum import StrEnum


class SocketMessage(StrEnum):
    # A conversation's socket (streaming.conversations), to the client.
    ENTRY = "entry"  # a transcript row
    WAITING = "waiting"  # the messages waiting for a place
    ANSWER = "answer"  # the running answer's id and status
    RUN_EVENT = "run_event"  # an event of the running answer
    TOKEN = "token"  # a piece of the running answer's streamed output
    # A run's API socket (streaming.consumers) and its Server-Sent Events (streaming.sse), to
    # the client; its events are typed by their EventType instead.
    STREAM_TOKEN = "stream_token"  # a piece of the run's streamed output
    CLOSED = "closed"  # SSE only: the stream's credential ended (a socket is closed instead)
    # The task socket (streaming.task_socket), seed 000's protocol: the client's request, then
    # to the client its acceptance, the run's progress and its result (and STREAM_TOKEN, ERROR).
    TASK_REQUEST = "task_request"
    TASK_ACCEPTED = "task_accepted"
    PROGRESS_UPDATE = "progress_update"
    RESULT = "result"
    # Both API sockets: the client's keep-alive, its answer, and what anything else gets.
    PING = "ping"
    PONG = "pong"
    ERROR = "error"
    # The notices socket (streaming.notices): a run waits for the person.
    APPROVAL_WAITING = "approval_waiting"
