"""The pages: function views, services for writes, selectors for reads, a partial for htmx."""

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails

from agents_app.connections.selectors import connections_enabled
from agents_app.core.errors import DomainError
from agents_app.models import AuditInterface, Run
from agents_app.runs import selectors, services
from agents_app.runs.recipes import recipe_for
from agents_app.runs.replays import run_replay
from agents_app.web import run_page
from agents_app.web.files import files_context
from agents_app.web.forms import TaskForm
from agents_app.web.stream_view import final_view, silence_notice
from agents_app.web.team_panel import team_context


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails
    user: AbstractBaseUser


def _owned_run(request: HtmxHttpRequest, run_id: int) -> Run:
    try:
        return selectors.run_get(user=request.user, run_id=run_id)
    except DomainError as error:
        raise Http404(error.message) from None


@login_required
@require_http_methods(["GET", "POST"])
def task_new(request: HtmxHttpRequest) -> HttpResponse:
    form = TaskForm(request.POST or None)
    error: DomainError | None = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                run = services.task_submit(
                    owner=request.user,
                    interface=AuditInterface.WEB,
                    text=form.cleaned_data["task"],
                    context=form.cleaned_data["context"],
                    max_tokens=form.cleaned_data["max_tokens"],
                    max_tool_calls=form.cleaned_data["max_tool_calls"],
                    approve_plan=form.cleaned_data["approve_plan"],
                    approval_timeout=form.cleaned_data["approval_timeout"],
                    approval_on_timeout=form.cleaned_data["approval_on_timeout"] or None,
                    fast_path=form.cleaned_data["fast_path"],
                    connection=form.cleaned_data["connection"] or None,
                    planning_connection=form.cleaned_data["planning_connection"] or None,
                    verifying_connection=form.cleaned_data["verifying_connection"] or None,
                    team=form.cleaned_data["team"],
                    close_policy=form.cleaned_data["close_policy"] or None,
                )
            except DomainError as exc:
                error, status = exc, exc.http_status
                field = exc.details.get("field") if isinstance(exc.details, dict) else None
                if field in form.fields:
                    form.add_error(field, exc.message)
                    error = None
            else:
                if request.htmx:
                    return HttpResponseClientRedirect(run_url(run))
                return redirect(run_url(run))
        else:
            status = 400
    context = {"form": form, "error": error, "nav": "task_new"}
    template = "agents/partials/task_form.html" if request.htmx else "agents/task_new.html"
    return render(request, template, context, status=status)


def run_url(run: Run) -> str:
    return reverse("run_detail", args=[run.pk])


def render_run(
    request: HtmxHttpRequest,
    run_id: int,
    *,
    error: DomainError | None = None,
    status: int = 200,
    approval: dict[str, Any] | None = None,
) -> HttpResponse:
    """The run page; `approval` replaces the approval card's context (a refused decision)."""
    run = _owned_run(request, run_id)
    # Events first: the regions read after them are at least as new as the seq the page
    # reports, and the socket replays whatever commits in between.
    events = selectors.run_events(run=run, after=0, limit=2000)
    run = selectors.run_detail(user=request.user, run_id=run_id)
    context = run_page.run_page_context(run=run, plans=run.plan_list, events=events)
    context.update(
        attempts=list(
            selectors.runs_for(request.user).filter(task_id=run.task_id).order_by("attempt")
        ),
        task_context=json.dumps(run.task.context, indent=2, ensure_ascii=False),
        **files_context(run),
        **team_context(user=request.user, run=run),
        stream=final_view(run, list(run.plan_list[-1].steps.all()) if run.plan_list else []),
        silence=silence_notice(run, events),
        page_link=recipe_for(run.kind).page_link(run),
        # The models a fork of a step may run on (the step's "Fork after this step" form).
        fork_connections=(
            list(connections_enabled())
            if run.is_terminal and "fork" in recipe_for(run.kind).actions
            else []
        ),
        error=error,
        **(approval or {}),
    )
    return render(request, "agents/run_detail.html", context, status=status)


@login_required
@require_http_methods(["GET"])
def run_detail(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    return render_run(request, run_id)


def _controls(request: HtmxHttpRequest, run: Run, error: DomainError | None) -> HttpResponse:
    """The Cancel/Restart box for htmx, with the status badge swapped out of band."""
    html = render_to_string(
        "agents/partials/run_controls.html", {"run": run, "error": error}, request=request
    ) + render_to_string(
        "agents/partials/run_status.html", {"run": run, "oob": True}, request=request
    )
    return HttpResponse(html, status=error.http_status if error else 200)


def _control(request: HtmxHttpRequest, run_id: int, act) -> tuple[Run | None, HttpResponse | None]:
    """Apply `act(run)` (a service call) to the user's run: (its result, None), or on a refusal
    (None, the Cancel/Restart box with the error for htmx, or the run page)."""
    run = _owned_run(request, run_id)
    try:
        return act(run), None
    except DomainError as error:
        if request.htmx:
            return None, _controls(request, Run.objects.get(pk=run.pk), error)
        return None, render_run(request, run_id, error=error, status=error.http_status)


@login_required
@require_POST
def run_cancel(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    run, refused = _control(
        request,
        run_id,
        lambda run: services.run_cancel(run=run, actor=request.user, interface=AuditInterface.WEB),
    )
    if refused:
        return refused
    if request.htmx:
        return _controls(request, run, None)
    return redirect(run_url(run))


@login_required
@require_POST
def run_pause(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    return _paused_or_resumed(request, run_id, services.run_pause)


@login_required
@require_POST
def run_resume(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    return _paused_or_resumed(request, run_id, services.run_resume)


def _paused_or_resumed(request: HtmxHttpRequest, run_id: int, change) -> HttpResponse:
    run, refused = _control(
        request,
        run_id,
        lambda run: change(run=run, actor=request.user, interface=AuditInterface.WEB),
    )
    if refused:
        return refused
    if request.htmx:
        return _controls(request, run, None)
    return redirect(run_url(run))


@login_required
@require_POST
def run_restart(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    return _to_new_run(request, run_id, services.run_restart)


@login_required
@require_POST
def run_replay_view(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    """Replay the run (runs.replays): its recorded answers, no model; the replay's page."""
    return _to_new_run(request, run_id, run_replay)


def _to_new_run(request: HtmxHttpRequest, run_id: int, make) -> HttpResponse:
    """A new run made from the person's run `run_id` by `make` (a restart, a replay): its page."""
    new_run, refused = _control(
        request,
        run_id,
        lambda run: make(run=run, actor=request.user, interface=AuditInterface.WEB),
    )
    if refused:
        return refused
    if request.htmx:
        return HttpResponseClientRedirect(run_url(new_run))
    return redirect(run_url(new_run))
