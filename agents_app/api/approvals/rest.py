"""REST endpoints for approvals, approval rules and preferences: Schema in, service out.

Lists show the caller's own approvals; one approval is seen and decided by its owner or by
staff (`selectors.approval_get`), and anyone else hears NOT_FOUND, never that it exists.
"""

from datetime import datetime
from typing import Any, Literal

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema, Status

from agents_app.api.approvals.schemas import ApprovalOut
from agents_app.api.pagination import page_of
from agents_app.api.schemas import (
    Flag,
    Id,
    JsonObject,
    NonBlankText,
    Page,
    PageSize,
    Text,
    errors,
)
from agents_app.approvals import decisions, rules, selectors
from agents_app.approvals.policy import YOLO_PERMISSION, yolo_active
from agents_app.approvals.presenters import approval_payload
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.models import (
    ApprovalRule,
    ApprovalStatus,
    AuditInterface,
    Decision,
    Remember,
)

router = Router(tags=["approvals"])

BULK_MAX = 1000
# ApprovalRule.tool's column.
TOOL_MAX = 200


class ApprovalPage(Schema):
    success: bool = True
    count: int
    page: int
    page_size: int
    results: list[ApprovalOut]


class ApprovalQuery(Schema):
    status: ApprovalStatus | None = None
    run_id: Id | None = None
    tool: Text | None = None
    page: Page = 1
    page_size: PageSize = 20


class DecisionIn(Schema):
    decision: Decision
    arguments: JsonObject | None = Field(
        default=None, description="modify only: the arguments to run instead; they must fit."
    )
    remember: Remember = Field(
        default=Remember.NOTHING,
        description='approve only: "tool" allows the tool from now on, "call" this exact call, '
        '"host" the tool\'s calls that reach the one host this call reaches (also when its '
        "arguments came from a tool's output).",
    )
    note: str = Field(
        default="",
        max_length=2_000,
        description="a plan only: with deny, what is wrong with it (the planner makes a new "
        "plan with it); with modify, why it was edited (the verifier reads it with the steps).",
    )


class BulkIn(Schema):
    decision: Decision = Field(description="approve, skip, deny or cancel.")
    tool: NonBlankText | None = Field(
        default=None,
        max_length=TOOL_MAX,
        description=f"Your pending approvals of this tool, the oldest {BULK_MAX} of them.",
    )
    ids: list[Id] | None = Field(default=None, max_length=BULK_MAX)


class Refused(Schema):
    id: int
    code: str
    message: str


class BulkOut(Schema):
    decided: list[ApprovalOut]
    refused: list[Refused]


class RuleIn(Schema):
    tool: NonBlankText = Field(max_length=TOOL_MAX)
    arguments: JsonObject | None = Field(
        default=None, description="null: every call of the tool; an object: this exact call."
    )
    pattern_kind: Literal["", "host", "path_prefix", "command"] = Field(
        default="",
        description="Narrow the rule to calls that reach one host (and its subdomains), "
        "touch paths under one prefix, or run a command starting with these words. Such a "
        "rule also lets through a call whose arguments came from a tool's output.",
    )
    pattern: str = Field(default="", max_length=500, description="The host, prefix or command.")


class RuleOut(Schema):
    id: int
    tool: str
    exact: bool
    arguments: dict[str, Any] | None
    arguments_sha256: str
    pattern_kind: str
    pattern: str
    scope: str
    created_via: str
    created_at: datetime


class RuleList(Schema):
    results: list[RuleOut]


class PreferencesIn(Schema):
    yolo: Flag = Field(description="Run every tool call without asking.")


class PreferencesOut(Schema):
    yolo: bool = Field(description="YOLO mode is on (and still permitted).")
    yolo_permitted: bool = Field(description="Staff granted the permission to turn it on.")


def rule_out(rule: ApprovalRule) -> dict[str, Any]:
    return {
        "id": rule.pk,
        "tool": rule.tool,
        "exact": rule.is_exact,
        "arguments": rule.arguments,
        "arguments_sha256": rule.arguments_sha256,
        "pattern_kind": rule.pattern_kind,
        "pattern": rule.pattern,
        "scope": rule.scope,
        "created_via": rule.created_via,
        "created_at": rule.created_at,
    }


def preferences_out(user: Any) -> dict[str, bool]:
    return {"yolo": yolo_active(user), "yolo_permitted": user.has_perm(YOLO_PERMISSION)}


@router.get("/approvals", response=ApprovalPage, summary="List your approvals, newest first")
def list_approvals(request: HttpRequest, query: Query[ApprovalQuery]):
    approvals = selectors.approvals_for(request.user)
    if query.status:
        approvals = approvals.filter(status=query.status)
    if query.run_id is not None:
        approvals = approvals.filter(run_id=query.run_id)
    if query.tool:
        approvals = approvals.filter(tool=query.tool)
    return page_of(approvals, query.page, query.page_size, approval_payload)


@router.get("/approvals/{int:approval_id}", response=ApprovalOut, summary="One approval")
def get_approval(request: HttpRequest, approval_id: int):
    """Yours, or any as staff; 404 for anyone else."""
    return approval_payload(selectors.approval_get(user=request.user, approval_id=approval_id))


@router.post(
    "/approvals/{int:approval_id}",
    response={200: ApprovalOut, **errors(409)},
    summary="Decide an approval",
)
def decide_approval(request: HttpRequest, approval_id: int, payload: DecisionIn):
    """approve | modify (with `arguments` that fit the tool's schema) | skip (the step) |
    deny (the call; the model goes on without it) | cancel (the run). A plan is approved,
    modified (`arguments`: `{"steps": [{"objective", "tool_names", "depends_on"}, …]}`, a new
    plan version that runs), denied with a `note` (the planner makes a new plan with it) or
    its run cancelled. The first decision wins: a second one is 409 CONFLICT and nothing runs
    twice."""
    decided = decisions.approval_decide_as(
        user=request.user,
        approval_id=approval_id,
        decision=payload.decision,
        arguments=payload.arguments,
        remember=payload.remember,
        note=payload.note,
        interface=AuditInterface.API,
    )
    return approval_payload(decided)


@router.post("/approvals/bulk", response=BulkOut, summary="Decide many approvals at once")
def decide_approvals(request: HttpRequest, payload: BulkIn):
    """Either `tool` (your pending approvals of that tool) or `ids` (at most 1000). Each is
    decided on its own: those that cannot be are listed in `refused` with the reason."""
    if (payload.tool is None) == (payload.ids is None):
        raise DomainError(
            ErrorCode.VALIDATION_ERROR, "Give either `tool` or `ids`", {"fields": ["tool", "ids"]}
        )
    if payload.decision == Decision.MODIFY:
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            "modify edits one call's arguments: decide it on its own",
            {"field": "decision"},
        )
    if payload.ids is not None:
        ids = list(dict.fromkeys(payload.ids))
    else:
        pending = selectors.approvals_for(request.user).filter(
            status=ApprovalStatus.PENDING, tool=payload.tool
        )
        ids = list(pending.order_by("created_at", "id").values_list("pk", flat=True)[:BULK_MAX])
    decided, refused = decisions.approvals_decide_many(
        approval_ids=ids,
        decision=payload.decision,
        actor=request.user,
        interface=AuditInterface.API,
    )
    return {"decided": [approval_payload(a) for a in decided], "refused": refused}


@router.get("/approval-rules", response=RuleList, summary="Your approval rules")
def list_rules(request: HttpRequest):
    rules = ApprovalRule.objects.filter(owner=request.user)
    return {"results": [rule_out(rule) for rule in rules]}


@router.post("/approval-rules", response={201: RuleOut}, summary="Allow a tool or one call")
def create_rule(request: HttpRequest, payload: RuleIn):
    """A `moderate` call this rule matches runs without asking. Creating a rule that exists
    answers with that rule."""
    rule = rules.rule_create(
        owner_id=request.user.pk,
        tool=payload.tool,
        arguments=payload.arguments,
        pattern_kind=payload.pattern_kind,
        pattern=payload.pattern,
        actor=request.user,
        interface=AuditInterface.API,
    )
    return Status(201, rule_out(rule))


@router.delete("/approval-rules/{int:rule_id}", response={204: None}, summary="Revoke a rule")
def delete_rule(request: HttpRequest, rule_id: int):
    rule = ApprovalRule.objects.filter(owner=request.user, pk=rule_id).first()
    if rule is None:
        raise DomainError(ErrorCode.NOT_FOUND, f"Approval rule {rule_id} not found")
    rules.rule_revoke(rule=rule, actor=request.user, interface=AuditInterface.API)
    return Status(204, None)


@router.get("/preferences", response=PreferencesOut, summary="Your preferences")
def get_preferences(request: HttpRequest):
    return preferences_out(request.user)


@router.put(
    "/preferences",
    response={200: PreferencesOut, **errors(403)},
    summary="Turn YOLO mode on or off",
)
def set_preferences(request: HttpRequest, payload: PreferencesIn):
    """Turning YOLO mode on needs the permission staff grant: 403 FORBIDDEN without it."""
    rules.yolo_set(user=request.user, on=payload.yolo, interface=AuditInterface.API)
    return preferences_out(request.user)
