"""Contract agent tabs on the chat page (seed 002): [+ Agent] opens a tab with the contract, the
model and the budgets, and [Start]; a running agent shows its attempt's output live, [Stop] and
its status; a stopped, completed or failed one [Restart] with the contract editable again, its
earlier attempts and each attempt's log file.

Views: form → contracts service → the page again (a redirect, or the page with the error and
its HTTP status). The output (web.agent_output) is the attempt's transcript drawn by the chat
rows' templates (one renderer), with its evaluations and log problems between them; agent.js
fetches what follows a seq from the `agent_output` view whenever the attempt's conversation
socket says something changed."""

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from agents_app.contracts.downloads import log_download
from agents_app.contracts.selectors import (
    STATUS_LABELS,
    AgentStatus,
    agent_get,
    agent_state,
    agents_for,
    attempt_get,
)
from agents_app.contracts.services import (
    BUDGETS,
    agent_create,
    agent_restart,
    agent_start,
    agent_stop,
    agent_update,
)
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.inputs import QUERY_INT_MAX, STORED_INT_MAX
from agents_app.models import AuditInterface, ContractAgent
from agents_app.web.agent_output import attempt_output
from agents_app.web.chat import render_page
from agents_app.web.views import HtmxHttpRequest


def _owned(request: HtmxHttpRequest, agent_id: int) -> ContractAgent:
    try:
        return agent_get(user=request.user, agent_id=agent_id)
    except DomainError as error:
        raise Http404(error.message) from None


def agent_url(agent: ContractAgent) -> str:
    return reverse("agent_tab", args=[agent.pk])


def _form(request: HtmxHttpRequest) -> dict[str, str]:
    return {field: request.POST.get(field, "") for field in ("contract", "connection", *BUDGETS)}


def _budgets(form: dict[str, str]) -> dict[str, int | None]:
    """The budgets as posted: empty is the setting's default (None)."""
    values: dict[str, int | None] = {}
    for field in BUDGETS:
        raw = form[field].strip()
        if raw == "":
            values[field] = None
        elif raw.isascii() and raw.isdigit() and 1 <= int(raw) <= STORED_INT_MAX:
            values[field] = int(raw)
        else:
            raise DomainError(
                ErrorCode.VALIDATION_ERROR,
                f"{field.replace('_', ' ')} is a whole number from 1 to {STORED_INT_MAX}, "
                "or empty for the default",
                {"field": field},
            )
    return values


def _page(request: HtmxHttpRequest, **context: Any) -> HttpResponse:
    return render_page(request, None, **context)


def _agent_page(
    request: HtmxHttpRequest,
    agent: ContractAgent,
    *,
    error: DomainError | None = None,
    form: dict[str, str] | None = None,
) -> HttpResponse:
    agent.refresh_from_db()
    status = error.http_status if error else 200
    return _page(request, status=status, agent=agent, agent_error=error, agent_form=form)


@login_required
@require_GET
def agent_tab(request: HtmxHttpRequest, agent_id: int) -> HttpResponse:
    return _agent_page(request, _owned(request, agent_id))


@login_required
@require_GET
def agent_new(request: HtmxHttpRequest) -> HttpResponse:
    """[+ Agent]: a new tab, Agent-N, with an empty contract (the agent exists once it has one:
    [Start] creates and starts it)."""
    return _page(request, draft=_draft_name(request))


def _draft_name(request: HtmxHttpRequest) -> str:
    return f"Agent-{agents_for(request.user).count() + 1}"


@login_required
@require_POST
def agent_create_start(request: HtmxHttpRequest) -> HttpResponse:
    """[Start] in a new tab: the agent is created with the contract, the model and the budgets
    and started. A refused start leaves it Ready in its tab with the reason."""
    form = _form(request)
    try:
        agent = agent_create(
            owner=request.user,
            interface=AuditInterface.WEB,
            contract=form["contract"],
            connection=form["connection"] or None,
            **_budgets(form),
        )
    except DomainError as error:
        return _page(
            request,
            status=error.http_status,
            draft=_draft_name(request),
            agent_error=error,
            agent_form=form,
        )
    try:
        agent_start(agent=agent, actor=request.user, interface=AuditInterface.WEB)
    except DomainError as error:
        return _agent_page(request, agent, error=error)
    return redirect(agent_url(agent))


def _changes(request: HtmxHttpRequest) -> tuple[dict[str, str], dict[str, Any]]:
    """The form and the changes it asks for (none for a field it does not carry)."""
    form = _form(request)
    changes: dict[str, Any] = {}
    if "contract" in request.POST:
        changes["contract"] = form["contract"]
    if "connection" in request.POST:
        changes["connection"] = form["connection"] or None
    if all(field in request.POST for field in BUDGETS):
        changes.update(_budgets(form))
    return form, changes


@login_required
@require_POST
def agent_start_view(request: HtmxHttpRequest, agent_id: int) -> HttpResponse:
    """[Start] of a Ready agent (its contract as edited), or [Restart] after a stop, a failure
    or completion: a new attempt. 409 while it runs, 503 under the kill switch."""
    agent = _owned(request, agent_id)
    form: dict[str, str] | None = None
    try:
        form, changes = _changes(request)
        if agent_state(agent).status == AgentStatus.READY:
            if changes:
                agent = agent_update(
                    agent=agent, actor=request.user, interface=AuditInterface.WEB, **changes
                )
            agent_start(agent=agent, actor=request.user, interface=AuditInterface.WEB)
        else:
            agent_restart(agent=agent, actor=request.user, interface=AuditInterface.WEB, **changes)
    except DomainError as error:
        return _agent_page(request, agent, error=error, form=form)
    return redirect(agent_url(agent))


@login_required
@require_POST
def agent_stop_view(request: HtmxHttpRequest, agent_id: int) -> HttpResponse:
    """[Stop]: the request in flight finishes, no further one is made, the output stays.
    [Stop now] (offered once stopping, `now=1`): the request in flight is cut at once."""
    agent = _owned(request, agent_id)
    try:
        agent_stop(
            agent=agent,
            actor=request.user,
            interface=AuditInterface.WEB,
            now=request.POST.get("now") == "1",
        )
    except DomainError as error:
        return _agent_page(request, agent, error=error)
    if request.htmx:
        return HttpResponse(status=204)
    return redirect(agent_url(agent))


@login_required
@require_POST
def agent_close(request: HtmxHttpRequest, agent_id: int) -> HttpResponse:
    """Close the tab; an attempt running goes on (reopen it from the history)."""
    agent = _owned(request, agent_id)
    agent_update(agent=agent, actor=request.user, interface=AuditInterface.WEB, is_open=False)
    return redirect("chat_home")


@login_required
@require_POST
def agent_reopen(request: HtmxHttpRequest, agent_id: int) -> HttpResponse:
    agent = _owned(request, agent_id)
    agent_update(agent=agent, actor=request.user, interface=AuditInterface.WEB, is_open=True)
    return redirect(agent_url(agent))


@login_required
@require_GET
def agent_output(request: HtmxHttpRequest, agent_id: int) -> HttpResponse:
    """The latest attempt's output after `?after=SEQ` (rows) and `?events=SEQ` (evaluations),
    with its status: what agent.js merges into the tab. A new attempt has another run: the
    tab sees `data-run` change and reloads."""
    agent = _owned(request, agent_id)
    state = agent_state(agent)
    output = None
    if state.run is not None:
        output = attempt_output(
            state.run,
            after=_query_int(request, "after"),
            events_after=_query_int(request, "events"),
        )
    context = {
        "agent": agent,
        "state": state,
        "status_label": STATUS_LABELS[state.status],
        "attempt": state.run,
        "output": output,
    }
    return render(request, "agents/partials/agent_update.html", context)


def _query_int(request: HtmxHttpRequest, name: str) -> int:
    raw = request.GET.get(name, "0")
    return int(raw) if raw.isascii() and raw.isdigit() and int(raw) <= QUERY_INT_MAX else 0


@login_required
@require_GET
def agent_log(request: HtmxHttpRequest, agent_id: int, number: int) -> HttpResponse:
    """Attempt `number`'s log file as a text/plain download (rendered from the rows when the
    file cannot be written, with the reason in X-Log-Write-Error, as REST does)."""
    agent = _owned(request, agent_id)
    try:
        run = attempt_get(agent=agent, number=number)
    except DomainError as error:
        raise Http404(error.message) from None
    return log_download(run)
