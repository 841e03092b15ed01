"""The shapes of conversations that REST (/api/v1/conversations) and MCP answer with, and a
page of them; the payloads come from agents_app.conversations.presenters."""

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Field, Schema
from pydantic import ConfigDict, StrictInt

from agents_app.api.pagination import page_of
from agents_app.api.schemas import Flag, NonBlankText, Page, PageSize, Text
from agents_app.conversations import selectors, services
from agents_app.conversations.presenters import conversations_now
from agents_app.core.inputs import QUERY_INT_MAX
from agents_app.models import DoubleTexting

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
    # conversations.outcomes.MessageOutcome (tests/conversations/test_message_outcome.py)
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


def conversation_page(user: Any, page: int, page_size: int) -> dict[str, Any]:
    """One page of the user's conversations, most recently active first (REST and MCP)."""
    listed = page_of(selectors.conversations_for(user), page, page_size, lambda c: c)
    listed["results"] = conversations_now(listed["results"])
    return listed
