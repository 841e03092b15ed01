"""REST endpoints for conversations: list, create, read and change one, send a message with a
double-texting mode, read the transcript after a seq, stop the running answer. Schema in,
service or selector, presenter out; another user's conversation is a 404 like a missing one."""

from datetime import datetime
from typing import Annotated, Any, Literal

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema, Status
from pydantic import ConfigDict, StrictInt

from agents_app.api.pagination import page_of
from agents_app.api.schemas import Flag, NonBlankText, Page, PageSize, Text, errors
from agents_app.conversations import selectors, services
from agents_app.conversations.presenters import (
    answer_payload,
    conversation_payload,
    entry_payload,
)
from agents_app.core.inputs import QUERY_INT_MAX
from agents_app.models import AuditInterface, Conversation, DoubleTexting

router = Router(tags=["conversations"])

ENTRIES_MAX = 1000

ConnectionChoice = Annotated[
    Annotated[StrictInt, Field(ge=1, le=QUERY_INT_MAX)] | Text | None,
    Field(
        description="The LLM connection its answers use: an id or name from GET "
        "/api/v1/connections; null: the default one, whichever it is at each answer."
    ),
]
Title = Annotated[Text, Field(max_length=services.TITLE_CHARS)]
Instructions = Annotated[
    Text,
    Field(
        max_length=services.INSTRUCTIONS_MAX_CHARS,
        description="The person's standing instructions, sent with every answer.",
    ),
]
DOUBLE_TEXTING = (
    "What a message sent while an answer runs does: enqueue (answered next), reject (409), "
    "interrupt (the running answer stops at its next checkpoint; this one is answered next), "
    "steer (delivered into the running answer at its next step boundary)."
)


class _Strict(Schema):
    """A body with a field this API does not know is refused (400), not silently ignored."""

    model_config = ConfigDict(extra="forbid")


class ConversationIn(_Strict):
    title: Title = ""
    connection: ConnectionChoice = None
    double_texting: DoubleTexting = Field(default=DoubleTexting.ENQUEUE, description=DOUBLE_TEXTING)
    instructions: Instructions = ""


class ConversationChange(_Strict):
    """Only the fields sent change."""

    title: Title = None
    connection: ConnectionChoice = None
    double_texting: DoubleTexting = Field(default=None, description=DOUBLE_TEXTING)
    instructions: Instructions = None
    is_open: Flag = Field(default=None, description="false: its tab is closed on the chat page.")


class MessageIn(_Strict):
    text: Annotated[NonBlankText, Field(max_length=services.MESSAGE_MAX_CHARS)]
    mode: DoubleTexting | None = Field(
        default=None, description=f"null: the conversation's double_texting. {DOUBLE_TEXTING}"
    )


class ConnectionRef(Schema):
    id: int
    name: str
    model: str


class EntryOut(Schema):
    seq: int | None = Field(description="Its place in the transcript; null while it waits.")
    id: int
    kind: str = Field(
        description="user, assistant, reasoning, tool_call, tool_result or condensation."
    )
    text: str
    data: dict[str, Any]
    run_id: int | None = Field(description="The answer (a run of kind chat) it belongs to.")
    turn: int | None
    mode: str = Field(description="A person's message: the double-texting mode it was sent with.")
    delivered_at_turn: int | None = Field(
        description="A steered message: the model turn of the running answer it was delivered at."
    )
    created_at: datetime


class AnswerOut(Schema):
    run_id: int
    status: str


class ConversationOut(Schema):
    id: int
    title: str
    connection: ConnectionRef | None = Field(description="null: the default connection.")
    double_texting: str
    instructions: str
    is_open: bool
    entry_seq: int = Field(description="The seq of its last transcript row.")
    running_answer: AnswerOut | None
    waiting: list[EntryOut] = Field(
        description="The person's messages not yet in the transcript (queued or being steered)."
    )
    created_at: datetime
    updated_at: datetime


class ConversationPage(Schema):
    success: bool = True
    count: int
    page: int
    page_size: int
    results: list[ConversationOut]


class MessagePosted(Schema):
    success: bool = True
    entry: EntryOut
    run_id: int | None = Field(description="The answer started for it now; null while it waits.")
    outcome: Literal["answered", "queued", "steered"]


class EntryPage(Schema):
    success: bool = True
    conversation_id: int
    entries: list[EntryOut]
    last_seq: int = Field(description="Pass as `after` for the next page.")
    has_more: bool
    running_answer: AnswerOut | None
    waiting: list[EntryOut]


class Stopped(Schema):
    success: bool = True
    stopped_run_id: int | None = Field(description="The answer asked to stop; null: none ran.")
    conversation: ConversationOut


class ConversationListQuery(Schema):
    page: Page = 1
    page_size: PageSize = 20


def present(conversation: Conversation) -> dict[str, Any]:
    """A conversation as it is now, with its running answer and waiting messages."""
    return conversation_payload(
        conversation,
        running=selectors.answer_running(conversation),
        waiting=selectors.waiting_messages(conversation),
    )


def present_page(conversations: list[Conversation]) -> list[dict[str, Any]]:
    states = selectors.conversation_states(conversations)
    return [
        conversation_payload(c, running=states[c.pk][0], waiting=states[c.pk][1])
        for c in conversations
    ]


def conversation_page(user: Any, page: int, page_size: int) -> dict[str, Any]:
    """One page of the user's conversations, most recently active first (REST and MCP)."""
    listed = page_of(selectors.conversations_for(user), page, page_size, lambda c: c)
    listed["results"] = present_page(listed["results"])
    return listed


def entries_page(conversation: Conversation, *, after: int, limit: int) -> dict[str, Any]:
    """The transcript after `after`, with what still runs and waits (REST and MCP)."""
    entries = selectors.entries_after(conversation, after=after, limit=limit + 1)
    has_more = len(entries) > limit
    entries = entries[:limit]
    return {
        "conversation_id": conversation.pk,
        "entries": [entry_payload(e) for e in entries],
        "last_seq": entries[-1].seq if entries else after,
        "has_more": has_more,
        "running_answer": answer_payload(selectors.answer_running(conversation)),
        "waiting": [entry_payload(e) for e in selectors.waiting_messages(conversation)],
    }


def outcome_of(entry: Any, run: Any) -> str:
    if run is not None:
        return "answered"
    return "steered" if entry.mode == DoubleTexting.STEER else "queued"


@router.get("/conversations", response=ConversationPage, summary="List your conversations")
def list_conversations(request: HttpRequest, query: Query[ConversationListQuery]):
    """Your conversations, most recently active first."""
    return conversation_page(request.user, query.page, query.page_size)


@router.post(
    "/conversations",
    response={201: ConversationOut, **errors(503)},
    summary="Start a conversation",
)
def create_conversation(request: HttpRequest, payload: ConversationIn):
    """A new, empty conversation (201). An unknown or disabled connection is a 400; 503
    LLM_NOT_CONFIGURED when no usable LLM is configured."""
    conversation = services.conversation_create(
        owner=request.user, interface=AuditInterface.API, **payload.model_dump()
    )
    return Status(201, conversation_payload(conversation))


@router.get(
    "/conversations/{int:conversation_id}",
    response=ConversationOut,
    summary="A conversation with its running answer and waiting messages",
)
def get_conversation(request: HttpRequest, conversation_id: int):
    return present(selectors.conversation_get(user=request.user, conversation_id=conversation_id))


@router.patch(
    "/conversations/{int:conversation_id}",
    response={200: ConversationOut, **errors(503)},
    summary="Change a conversation",
)
def change_conversation(request: HttpRequest, conversation_id: int, payload: ConversationChange):
    """Title, connection, double_texting, instructions or is_open: only the fields sent."""
    conversation = selectors.conversation_get(user=request.user, conversation_id=conversation_id)
    changed = services.conversation_update(
        conversation=conversation,
        actor=request.user,
        interface=AuditInterface.API,
        **payload.model_dump(exclude_unset=True),
    )
    return present(changed)


@router.post(
    "/conversations/{int:conversation_id}/messages",
    response={201: MessagePosted, **errors(409, 503)},
    summary="Send a message",
)
def post_message(request: HttpRequest, conversation_id: int, payload: MessageIn):
    """201 with the stored message and the outcome: `answered` (an answer started: run_id),
    `queued` (answered after the running one; with interrupt, that one stops first) or
    `steered` (delivered into the running answer). 409 CONFLICT with mode reject while an
    answer runs (nothing is stored); 503 while the kill switch is engaged."""
    conversation = selectors.conversation_get(user=request.user, conversation_id=conversation_id)
    entry, run = services.message_post(
        conversation=conversation,
        actor=request.user,
        interface=AuditInterface.API,
        text=payload.text,
        mode=payload.mode,
    )
    entry.refresh_from_db()  # answered now: its seq and run were set on another instance
    return Status(
        201,
        {
            "entry": entry_payload(entry),
            "run_id": run.pk if run else None,
            "outcome": outcome_of(entry, run),
        },
    )


@router.get(
    "/conversations/{int:conversation_id}/entries",
    response=EntryPage,
    summary="The transcript after a seq",
)
def list_entries(
    request: HttpRequest,
    conversation_id: int,
    after: int = Query(0, ge=0, le=QUERY_INT_MAX),
    limit: int = Query(500, ge=1, le=ENTRIES_MAX),
):
    """Transcript rows with seq > `after`, in order, with the answer running and the messages
    waiting. Poll with the last `last_seq`, or follow the WebSocket
    /ws/api/conversations/{id}/?after=SEQ."""
    conversation = selectors.conversation_get(user=request.user, conversation_id=conversation_id)
    return entries_page(conversation, after=after, limit=limit)


@router.post(
    "/conversations/{int:conversation_id}/stop",
    response=Stopped,
    summary="Stop the running answer",
)
def stop_conversation(request: HttpRequest, conversation_id: int):
    """The running answer stops at its next checkpoint; the messages waiting after it join the
    transcript unanswered. Stopping with nothing running is no error: stopped_run_id null."""
    conversation = selectors.conversation_get(user=request.user, conversation_id=conversation_id)
    stopped = services.conversation_stop(
        conversation=conversation, actor=request.user, interface=AuditInterface.API
    )
    conversation.refresh_from_db()
    return {
        "stopped_run_id": stopped.pk if stopped else None,
        "conversation": present(conversation),
    }
