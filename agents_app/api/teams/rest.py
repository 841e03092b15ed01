"""GET /api/v1/runs/{id}/tree and /api/v1/runs/{id}/messages: a team's runs and what they
said to each other, for the owner of any run of the tree (another user's run is NOT_FOUND)."""

from datetime import datetime
from typing import Any

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema

from agents_app.api.pagination import page_of
from agents_app.api.schemas import Page, PageSize
from agents_app.orchestration import selectors
from agents_app.orchestration.presenters import message_payload, tree_node

router = Router(tags=["teams"])


class Usage(Schema):
    prompt_tokens: int
    completion_tokens: int
    tool_calls: int


class TreeNode(Schema):
    id: int
    kind: str = Field(description="team (the head node), child, micro, or task for a lone run.")
    status: str
    profile: str | None = Field(description="The agent profile it runs as; null: none.")
    parent_id: int | None
    root_id: int | None = Field(description="The head node; null for the head node itself.")
    depth: int = Field(description="The root is 0, its children 1, theirs 2.")
    step_index: int | None = Field(
        description="The index of the parent's plan step (subtask) it does; null: the root."
    )
    subtask: str = Field(description="What it was given to do (the root: the team's task).")
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    usage: Usage
    link: str = Field(description="The run's REST path.")


class TreeOut(Schema):
    success: bool = True
    run_id: int = Field(description="The run asked about.")
    root_id: int = Field(description="The head node of its tree (itself for a root).")
    runs: list[TreeNode] = Field(
        description="The root first, then each child followed by its own children; siblings "
        "in subtask order."
    )


class MessageOut(Schema):
    id: int
    root_id: int
    sender_id: int
    recipient_id: int
    from_agent: str
    to_agent: str
    type: str = Field(
        description="task_assignment, task_result, context_update, status_request, "
        "status_response or error."
    )
    payload: dict[str, Any]
    correlation_id: str = Field(description="Shared by an assignment and its result.")
    created_at: datetime


class MessagePage(Schema):
    success: bool = True
    count: int
    page: int
    page_size: int
    results: list[MessageOut]


class MessageQuery(Schema):
    page: Page = 1
    page_size: PageSize = 50


@router.get("/runs/{int:run_id}/tree", response=TreeOut, summary="A run's team: its tree of runs")
def run_tree(request: HttpRequest, run_id: int):
    """The tree the run belongs to (a head node's, asked from the head node or any child): every
    run with its kind, profile, status, subtask, place and usage. A run in no tree is a tree of
    one."""
    run, runs = selectors.tree_runs(user=request.user, run_id=run_id)
    return {"run_id": run.pk, "root_id": run.tree_root_id, "runs": [tree_node(r) for r in runs]}


@router.get(
    "/runs/{int:run_id}/messages",
    response=MessagePage,
    summary="The messages between the runs of a team",
)
def run_messages(request: HttpRequest, run_id: int, query: Query[MessageQuery]):
    """The tree's AgentMessages in the order they were written: assignments, results, errors."""
    messages = selectors.tree_messages(user=request.user, run_id=run_id)
    return page_of(messages, query.page, query.page_size, message_payload)
