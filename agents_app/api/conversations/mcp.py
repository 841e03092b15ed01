"""The MCP server's conversation tools: list and start conversations, send a message with a
double-texting mode, read the transcript after a seq, stop the running answer. The same
services, selectors and shapes as /api/v1/conversations (without REST's `success` flag), as the
key's user: another user's conversation is NOT_FOUND. Importing this module registers them on
`api.mcp_server.server`."""

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp_types import ToolAnnotations
from ninja import Schema
from pydantic import Field

from agents_app.api.conversations.schemas import (
    DOUBLE_TEXTING,
    ENTRIES_MAX,
    AnswerOut,
    ConnectionChoice,
    ConversationOut,
    EntryOut,
    Instructions,
    Title,
    conversation_page,
)
from agents_app.api.mcp_server import READ_ONLY, caller, in_django, tool
from agents_app.api.schemas import Id, NonBlankText, Page, PageSize
from agents_app.conversations import selectors, services
from agents_app.conversations.presenters import (
    conversation_now,
    conversation_payload,
    entry_payload,
    message_outcome,
    transcript_after,
)
from agents_app.core.inputs import QUERY_INT_MAX
from agents_app.models import AuditInterface, DoubleTexting


class ConversationList(Schema):
    count: int
    page: int
    page_size: int
    results: list[ConversationOut]


class MessageSent(Schema):
    entry: EntryOut
    run_id: int | None = Field(description="The answer started for it now; null while it waits.")
    # conversations.outcomes.MessageOutcome (tests/conversations/test_message_outcome.py)
    outcome: Literal["answered", "queued", "steered"]


class Transcript(Schema):
    conversation_id: int
    entries: list[EntryOut]
    last_seq: int = Field(description="Pass as `after` to read what follows.")
    has_more: bool
    running_answer: AnswerOut | None
    waiting: list[EntryOut]


class ConversationStopped(Schema):
    stopped_run_id: int | None
    conversation: ConversationOut


ConversationId = Annotated[
    Id, Field(description="The conversation's id (from create_conversation or list_conversations).")
]


@tool(annotations=READ_ONLY)
async def list_conversations(
    ctx: Context,
    page: Page = 1,
    page_size: Annotated[PageSize, Field(description="Conversations per page.")] = 20,
) -> ConversationList:
    """Your conversations, most recently active first, each with its running answer and the
    messages waiting for it."""

    def listed(user: Any) -> ConversationList:
        return ConversationList.model_validate(conversation_page(user, page, page_size))

    return await in_django(listed, caller(ctx))


@tool(annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=False))
async def create_conversation(
    ctx: Context,
    title: Title = "",
    connection: ConnectionChoice = None,
    double_texting: Annotated[DoubleTexting, Field(description=DOUBLE_TEXTING)] = (
        DoubleTexting.ENQUEUE
    ),
    instructions: Instructions = "",
) -> ConversationOut:
    """Start an empty conversation with a tool-using model; send it messages with
    send_message."""

    def create(user: Any) -> ConversationOut:
        conversation = services.conversation_create(
            owner=user,
            interface=AuditInterface.MCP,
            title=title,
            connection=connection,
            double_texting=double_texting,
            instructions=instructions,
        )
        return ConversationOut.model_validate(conversation_payload(conversation))

    return await in_django(create, caller(ctx))


@tool(annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=False))
async def send_message(
    ctx: Context,
    conversation_id: ConversationId,
    text: Annotated[NonBlankText, Field(max_length=services.MESSAGE_MAX_CHARS)],
    mode: Annotated[
        DoubleTexting | None,
        Field(description=f"null: the conversation's double_texting. {DOUBLE_TEXTING}"),
    ] = None,
) -> MessageSent:
    """Send a message. outcome: `answered` (an answer started: run_id), `queued` (answered
    after the running one) or `steered` (delivered into the running one). CONFLICT with mode
    reject while an answer runs. Follow the answer with read_conversation."""

    def send(user: Any) -> MessageSent:
        conversation = selectors.conversation_get(user=user, conversation_id=conversation_id)
        entry, run = services.message_post(
            conversation=conversation,
            actor=user,
            interface=AuditInterface.MCP,
            text=text,
            mode=mode,
        )
        entry.refresh_from_db()
        return MessageSent.model_validate(
            {
                "entry": entry_payload(entry),
                "run_id": run.pk if run else None,
                "outcome": message_outcome(entry, run),
            }
        )

    return await in_django(send, caller(ctx))


@tool(annotations=READ_ONLY)
async def read_conversation(
    ctx: Context,
    conversation_id: ConversationId,
    after: Annotated[
        int, Field(ge=0, le=QUERY_INT_MAX, description="The last seq you hold; 0: from the start.")
    ] = 0,
    limit: Annotated[int, Field(ge=1, le=ENTRIES_MAX)] = 500,
) -> Transcript:
    """The transcript rows after seq `after`, in order, with the answer running (null when
    done) and the messages waiting. Call again with `last_seq` until running_answer is null."""

    def read(user: Any) -> Transcript:
        conversation = selectors.conversation_get(user=user, conversation_id=conversation_id)
        return Transcript.model_validate(transcript_after(conversation, after=after, limit=limit))

    return await in_django(read, caller(ctx))


@tool(annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=True))
async def stop_conversation(ctx: Context, conversation_id: ConversationId) -> ConversationStopped:
    """Stop the running answer at its next checkpoint; messages waiting after it join the
    transcript unanswered. With nothing running, stopped_run_id is null."""

    def stop(user: Any) -> ConversationStopped:
        conversation = selectors.conversation_get(user=user, conversation_id=conversation_id)
        stopped = services.conversation_stop(
            conversation=conversation, actor=user, interface=AuditInterface.MCP
        )
        conversation.refresh_from_db()
        return ConversationStopped.model_validate(
            {
                "stopped_run_id": stopped.pk if stopped else None,
                "conversation": conversation_now(conversation),
            }
        )

    return await in_django(stop, caller(ctx))
