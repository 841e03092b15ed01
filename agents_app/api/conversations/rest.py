"""REST endpoints for conversations: list, create, read and change one, send a message with a
double-texting mode, read the transcript after a seq, stop the running answer. Schema in,
service or selector, presenter out; another user's conversation is a 404 like a missing one."""

from django.http import HttpRequest
from ninja import Query, Router, Status

from agents_app.api.conversations.schemas import (
    ENTRIES_MAX,
    ConversationChange,
    ConversationIn,
    ConversationListQuery,
    ConversationOut,
    ConversationPage,
    EntryPage,
    MessageIn,
    MessagePosted,
    Stopped,
    conversation_page,
)
from agents_app.api.schemas import errors
from agents_app.conversations import selectors, services
from agents_app.conversations.presenters import (
    conversation_now,
    conversation_payload,
    entry_payload,
    message_outcome,
    transcript_after,
)
from agents_app.core.inputs import QUERY_INT_MAX
from agents_app.models import AuditInterface

router = Router(tags=["conversations"])


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
    return conversation_now(
        selectors.conversation_get(user=request.user, conversation_id=conversation_id)
    )


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
    return conversation_now(changed)


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
            "outcome": message_outcome(entry, run),
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
    return transcript_after(conversation, after=after, limit=limit)


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
        "conversation": conversation_now(conversation),
    }
