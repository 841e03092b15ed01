"""The people's side of approvals: deciding one from its run page, the list of what waits (with
one button per tool against approval fatigue), and the settings page (rules, YOLO mode)."""

import json
from itertools import groupby
from typing import Any
from urllib.parse import urlsplit

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils.text import capfirst
from django.views.decorators.http import require_GET, require_POST

from agents_app.approvals import decisions, rules, selectors
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.inputs import QUERY_INT_MAX
from agents_app.models import (
    Approval,
    ApprovalKind,
    ApprovalStatus,
    AuditInterface,
    Decision,
    Run,
)
from agents_app.web import plan_editor, run_page
from agents_app.web.forms import DecisionForm
from agents_app.web.settings_page import render_settings
from agents_app.web.views import HtmxHttpRequest, render_run, run_url

RECENT_DECIDED = 20


def _form_error(form: DecisionForm) -> DomainError:
    field, problems = next(iter(form.errors.items()))
    code = ErrorCode.INVALID_ARGUMENTS if field == "arguments" else ErrorCode.VALIDATION_ERROR
    return DomainError(code, problems[0], {"field": field})


def _decision_answer(
    request: HtmxHttpRequest, approval: Approval, context: dict[str, Any], status: int
) -> HttpResponse:
    """The approval card for htmx (and the run's new status on success); without htmx, the run
    page again, or the approvals page for staff deciding on someone else's run or for a
    decision taken from its queue (`back=queue`)."""
    own_run = approval.owner_id == request.user.pk
    if request.htmx:
        html = render_to_string("agents/partials/approval.html", context, request=request)
        # The run's status badge is on its page only: swapped in elsewhere (the approvals
        # queue), htmx finds no #run-status and reports an error.
        page = urlsplit(request.htmx.current_url or "").path
        if status == 200 and own_run and page in ("", run_url(approval.run)):
            run = Run.objects.get(pk=approval.run_id)
            html += render_to_string(
                "agents/partials/run_status.html", {"run": run, "oob": True}, request=request
            )
        return HttpResponse(html, status=status)
    if own_run and request.POST.get("back") != "queue":
        if status == 200:
            return redirect(run_url(approval.run))
        return render_run(request, approval.run_id, status=status, approval=context)
    if status == 200:
        approval.refresh_from_db()
        what = approval.tool or "the plan"
        messages.success(
            request, f"{capfirst(approval.get_status_display())}: {what} on run #{approval.run_id}."
        )
        return redirect("approval_list")
    return _render_list(request, error=context["approval_error"], status=status)


@login_required
@require_POST
def approval_decide(request: HtmxHttpRequest, approval_id: int) -> HttpResponse:
    approval = Approval.objects.select_related("run", "step").filter(pk=approval_id).first()
    # Someone else's approval looks exactly like a missing one.
    if approval is None or not approval.decidable_by(request.user):
        raise Http404("Approval not found")
    data = request.POST
    is_plan = approval.kind == ApprovalKind.PLAN
    # A plan's edit comes from the steps form unless its raw JSON was sent (`editor=json`).
    from_form = (
        is_plan
        and data.get("decision") == Decision.MODIFY
        and request.GET.get("editor") != "json"
        and plan_editor.posted(data)
    )
    try:
        if from_form:
            data = data.copy()
            edited = plan_editor.plan_of_rows(plan_editor.rows_posted(request.POST))
            data["arguments"] = json.dumps(edited)
        form = DecisionForm(data)
        if not form.is_valid():
            raise _form_error(form)
        decision = form.cleaned_data["decision"]
        note = form.cleaned_data["note"] if decision == Decision.DENY else ""
        if is_plan and decision == Decision.MODIFY:
            note = request.POST.get("edit_note", "")
        decisions.approval_decide(
            approval_id=approval.pk,
            decision=decision,
            actor=request.user,
            interface=AuditInterface.WEB,
            arguments=form.cleaned_data["arguments"],
            remember=form.cleaned_data["remember"],
            note=note,
        )
    except DomainError as error:
        approval.refresh_from_db()
        context = run_page.approval_context(
            approval if approval.is_pending else None,
            error=error,
            arguments_text=request.POST.get("arguments"),
            note_text=request.POST.get("note", ""),
            **_editor_kept(request, from_form),
        )
        return _decision_answer(request, approval, context, error.http_status)
    return _decision_answer(request, approval, run_page.approval_context(None), 200)


def _editor_kept(request: HtmxHttpRequest, from_form: bool) -> dict[str, Any]:
    """What the plan editor keeps of a refused edit: the rows and note as typed, and which
    editor was used (its box opens again)."""
    if not plan_editor.posted(request.POST):
        return {}
    return {
        "plan_rows": plan_editor.rows_posted(request.POST),
        "edit_note_text": request.POST.get("edit_note", ""),
        "editor": "form" if from_form else "json",
    }


@login_required
@require_POST
def approval_plan_edit(request: HtmxHttpRequest, approval_id: int) -> HttpResponse:
    """One change to a plan in the editor (add, remove, move a step up or down; `plan_edit`),
    nothing decided: the dialog again with the rows changed."""
    approval = Approval.objects.select_related("run", "step").filter(pk=approval_id).first()
    if approval is None or not approval.decidable_by(request.user):
        raise Http404("Approval not found")
    if not approval.is_pending or approval.kind != ApprovalKind.PLAN:
        error = DomainError(ErrorCode.CONFLICT, "This plan is no longer waiting for you")
        context = run_page.approval_context(None, error=error)
        return _decision_answer(request, approval, context, error.http_status)
    rows = plan_editor.operate(
        plan_editor.rows_posted(request.POST), request.POST.get("plan_edit", "")
    )
    context = run_page.approval_context(
        approval,
        arguments_text=request.POST.get("arguments"),
        note_text=request.POST.get("note", ""),
        plan_rows=rows,
        edit_note_text=request.POST.get("edit_note", ""),
        editor="form",
    )
    if request.htmx:
        html = render_to_string("agents/partials/approval.html", context, request=request)
        return HttpResponse(html)
    return render_run(request, approval.run_id, approval=context)


def _render_list(
    request: HtmxHttpRequest, *, error: DomainError | None = None, status: int = 200
) -> HttpResponse:
    approvals = selectors.approvals_for(request.user)
    pending = list(approvals.filter(status=ApprovalStatus.PENDING).order_by("tool", "created_at"))
    for approval in pending:
        approval.arguments_short = run_page.cut(run_page.compact_json(approval.arguments))
    calls = [a for a in pending if a.kind == ApprovalKind.TOOL_CALL]
    context = {
        "nav": "approvals",
        "error": error,
        "pending_count": len(pending),
        "groups": [(tool, list(items)) for tool, items in groupby(calls, key=lambda a: a.tool)],
        "plans": [a for a in pending if a.kind == ApprovalKind.PLAN],
        "recent": list(approvals.exclude(status=ApprovalStatus.PENDING)[:RECENT_DECIDED]),
    }
    return render(request, "agents/approvals.html", context, status=status)


@login_required
@require_GET
def approval_list(request: HtmxHttpRequest) -> HttpResponse:
    return _render_list(request)


@login_required
@require_POST
def approvals_bulk(request: HtmxHttpRequest) -> HttpResponse:
    """Approve every pending call of one tool, or the ones of it the page listed (`approval`
    ids), so a call that arrived after the page was drawn is not approved unseen."""
    tool = request.POST.get("tool", "")
    pending = selectors.approvals_for(request.user).filter(
        status=ApprovalStatus.PENDING, kind=ApprovalKind.TOOL_CALL, tool=tool
    )
    listed = request.POST.getlist("approval")
    if listed:
        # An id no approval can have (not ASCII digits, beyond bigint) matches none; dropping
        # it silently would widen the bulk decision to every pending call of the tool.
        ids = [int(i) for i in listed if i.isascii() and i.isdigit() and int(i) <= QUERY_INT_MAX]
        pending = pending.filter(pk__in=ids)
    ids = list(pending.order_by("created_at").values_list("pk", flat=True))
    if not tool or not ids:
        messages.info(request, f"No call of {tool or 'that tool'} is waiting for you.")
        return redirect("approval_list")
    decided, refused = decisions.approvals_decide_many(
        approval_ids=ids,
        decision=Decision.APPROVE,
        actor=request.user,
        interface=AuditInterface.WEB,
    )
    if decided:
        plural = "s" if len(decided) != 1 else ""
        messages.success(request, f"Approved {len(decided)} call{plural} of {tool}.")
    for refusal in refused:
        messages.error(request, refusal["message"])
    return redirect("approval_list")


@login_required
@require_GET
def settings_page(request: HtmxHttpRequest) -> HttpResponse:
    return render_settings(request)


@login_required
@require_POST
def rule_revoke(request: HtmxHttpRequest, rule_id: int) -> HttpResponse:
    rule = selectors.approval_rules_for(request.user).filter(pk=rule_id).first()
    if rule is None:
        raise Http404("Rule not found")
    rules.rule_revoke(rule=rule, actor=request.user, interface=AuditInterface.WEB)
    messages.success(request, f"Revoked: {rule.tool} ({rule.scope}) asks again.")
    return redirect("settings")


@login_required
@require_POST
def yolo_set(request: HtmxHttpRequest) -> HttpResponse:
    on = request.POST.get("yolo") == "on"
    try:
        if on and request.POST.get("confirm") != "yes":
            # Every call of every run would go ahead unasked: not on one stray click.
            raise DomainError(
                ErrorCode.VALIDATION_ERROR,
                "Tick the box to confirm that your runs' tool calls may run without asking.",
                {"fields": ["confirm"]},
            )
        rules.yolo_set(user=request.user, on=on, interface=AuditInterface.WEB)
    except DomainError as error:
        return render_settings(request, error=error, status=error.http_status)
    if not on:
        messages.success(request, "YOLO mode is off: risky calls ask you again.")
    # Turned on, the banner on every page says so: no second notice.
    return redirect("settings")
