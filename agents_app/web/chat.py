"""The chat page: a tab per open conversation, its transcript, the input at the bottom.

Views: form → service → partial. Each write is a conversations service (message_post,
conversation_stop, conversation_create/update); what a tab shows is read by web.chat_rows. A
tab's live rows come over ws/conversations/<id>/ and are drawn by fetching `chat_entries`, the
same templates the page uses, so there is one renderer. Without JavaScript every form still
works as a plain POST that comes back to the page."""

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from agents_app.connections.selectors import connections_enabled
from agents_app.contracts.selectors import AgentStatus, agent_states, agents_for
from agents_app.conversations.selectors import conversation_get, conversations_for
from agents_app.conversations.services import (
    conversation_create,
    conversation_stop,
    conversation_update,
    message_post,
)
from agents_app.core.errors import DomainError
from agents_app.core.inputs import QUERY_INT_MAX
from agents_app.models import (
    TERMINAL_STATUSES,
    AuditInterface,
    ContractAgent,
    Conversation,
    DoubleTexting,
    Run,
)
from agents_app.web.agent_panel import agent_context, form_context
from agents_app.web.chat_rows import chat_update
from agents_app.web.views import HtmxHttpRequest

HISTORY_SHOWN = 50

MODE_HELP = {
    DoubleTexting.ENQUEUE: "answered next, after the running answer",
    DoubleTexting.REJECT: "refused while an answer runs",
    DoubleTexting.INTERRUPT: "stops the running answer, then answered",
    DoubleTexting.STEER: "delivered into the running answer at its next step",
}


def _owned(request: HtmxHttpRequest, conversation_id: int) -> Conversation:
    try:
        return conversation_get(user=request.user, conversation_id=conversation_id)
    except DomainError as error:
        raise Http404(error.message) from None


def chat_url(conversation: Conversation) -> str:
    return reverse("chat", args=[conversation.pk])


def connection_choices() -> list[tuple[str, str]]:
    """The enabled connections, the default first with the value "" (a conversation on it
    follows the default when staff change it)."""
    return [
        (
            "" if c.is_default else str(c.pk),
            f"{c.name} ({c.model})" + (" · default" if c.is_default else ""),
        )
        for c in connections_enabled()
    ]


def _modes() -> list[tuple[str, str, str]]:
    return [(value, label, MODE_HELP[value]) for value, label in DoubleTexting.choices]


def panel_context(
    conversation: Conversation,
    *,
    composer_error: DomainError | None = None,
    composer_text: str = "",
    settings_error: DomainError | None = None,
    saved: bool = False,
    connections: list[tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """What one tab's panel renders."""
    return {
        "conversation": conversation,
        "update": chat_update(conversation),
        "connections": connection_choices() if connections is None else connections,
        "connection_value": (
            ""
            if conversation.connection is None or conversation.connection.is_default
            else str(conversation.connection_id)
        ),
        "modes": _modes(),
        "composer_error": composer_error,
        "composer_text": composer_text,
        "settings_error": settings_error,
        "saved": saved,
    }


def render_page(
    request: HtmxHttpRequest,
    conversation: Conversation | None,
    *,
    status: int = 200,
    new_error: DomainError | None = None,
    agent: ContractAgent | None = None,
    draft: str = "",
    agent_error: DomainError | None = None,
    agent_form: dict[str, str] | None = None,
    **panel: Any,
) -> HttpResponse:
    """The page with `conversation`'s tab shown, or `agent`'s, or a new agent's tab named
    `draft` (web.agent_tabs)."""
    owned = conversations_for(request.user)
    tabs = list(owned.filter(is_open=True).order_by("created_at", "id"))
    answering = set(
        Run.objects.filter(conversation__in=tabs)
        .exclude(status__in=TERMINAL_STATUSES)
        .values_list("conversation_id", flat=True)
    )
    for tab in tabs:
        tab.answering = tab.pk in answering
    connections = connection_choices()
    agents = agents_for(request.user)
    agent_tabs = list(agents.filter(is_open=True).order_by("created_at", "id"))
    states = agent_states(agent_tabs)
    for agent_tab in agent_tabs:
        agent_tab.running = states[agent_tab.pk].status == AgentStatus.RUNNING
    context = {
        "nav": "chat",
        "tabs": tabs,
        "agent_tabs": agent_tabs,
        "agent_history": list(agents.filter(is_open=False)[:HISTORY_SHOWN]),
        "active_agent": agent,
        "draft": draft,
        "history": list(owned.filter(is_open=False)[:HISTORY_SHOWN]),
        "active": conversation,
        "connections": connections,
        "modes": _modes(),
        "new_error": new_error,
    }
    if conversation is not None:
        context.update(panel_context(conversation, connections=connections, **panel))
    elif agent is not None or draft:
        context["agent_error"] = agent_error
        if agent is not None:
            context.update(
                agent_context(agent, error=agent_error, form=agent_form, connections=connections)
            )
        else:
            context.update(form_context(agent_form or {"connection": ""}))
    return render(request, "agents/chat.html", context, status=status)


@login_required
@require_GET
def chat_page(request: HtmxHttpRequest, conversation_id: int | None = None) -> HttpResponse:
    """The page, showing `conversation_id` or the first open tab; `?panel=1`: that tab's panel
    alone (chat.js loads a tab it has not shown yet this way, keeping the others running)."""
    if conversation_id is not None:
        conversation = _owned(request, conversation_id)
    else:
        owned = conversations_for(request.user).filter(is_open=True)
        conversation = owned.order_by("created_at", "id").first()
        if conversation is None:
            agent = agents_for(request.user).filter(is_open=True).order_by("created_at", "id")
            if first_agent := agent.first():
                return render_page(request, None, agent=first_agent)
    if conversation is not None and request.GET.get("panel"):
        return render(request, "agents/partials/chat_panel.html", panel_context(conversation))
    return render_page(request, conversation)


@login_required
@require_GET
def chat_entries(request: HtmxHttpRequest, conversation_id: int) -> HttpResponse:
    """The rows after `?after=SEQ` as HTML, with the waiting messages, the answer running,
    its approvals and the answers that ended badly: what chat.js merges into a tab."""
    conversation = _owned(request, conversation_id)
    raw = request.GET.get("after", "0")
    after = int(raw) if raw.isascii() and raw.isdigit() and int(raw) <= QUERY_INT_MAX else 0
    context = {"conversation": conversation, "update": chat_update(conversation, after=after)}
    return render(request, "agents/partials/chat_update.html", context)


@login_required
@require_POST
def chat_new(request: HtmxHttpRequest) -> HttpResponse:
    try:
        conversation = conversation_create(
            owner=request.user,
            interface=AuditInterface.WEB,
            connection=request.POST.get("connection") or None,
            double_texting=request.POST.get("double_texting") or DoubleTexting.ENQUEUE,
        )
    except DomainError as error:
        return render_page(request, None, status=error.http_status, new_error=error)
    return redirect(chat_url(conversation))


def _composer(
    request: HtmxHttpRequest,
    conversation: Conversation,
    *,
    error: DomainError | None = None,
    text: str = "",
) -> HttpResponse:
    """The input box for htmx (emptied after a send, keeping the text with an error), or the
    page again."""
    status = error.http_status if error else 200
    if not request.htmx:
        if error is None:
            return redirect(chat_url(conversation))
        return render_page(
            request, conversation, status=status, composer_error=error, composer_text=text
        )
    context = {"conversation": conversation, "composer_error": error, "composer_text": text}
    return render(request, "agents/partials/chat_composer.html", context, status=status)


@login_required
@require_POST
def chat_send(request: HtmxHttpRequest, conversation_id: int) -> HttpResponse:
    conversation = _owned(request, conversation_id)
    text = request.POST.get("text", "")
    try:
        message_post(
            conversation=conversation,
            actor=request.user,
            interface=AuditInterface.WEB,
            text=text,
            mode=request.POST.get("mode") or None,
        )
    except DomainError as error:
        return _composer(request, conversation, error=error, text=text)
    return _composer(request, conversation)


@login_required
@require_POST
def chat_stop(request: HtmxHttpRequest, conversation_id: int) -> HttpResponse:
    """Stop the running answer, from any tab or device: the others see it end over their
    sockets. The messages waiting after it are kept, unanswered."""
    conversation = _owned(request, conversation_id)
    conversation_stop(conversation=conversation, actor=request.user, interface=AuditInterface.WEB)
    if request.htmx:
        return HttpResponse(status=204)
    return redirect(chat_url(conversation))


@login_required
@require_POST
def chat_settings(request: HtmxHttpRequest, conversation_id: int) -> HttpResponse:
    """The conversation's double-texting mode and connection."""
    conversation = _owned(request, conversation_id)
    error = None
    try:
        conversation_update(
            conversation=conversation,
            actor=request.user,
            interface=AuditInterface.WEB,
            double_texting=request.POST.get("double_texting", ""),
            connection=request.POST.get("connection") or None,
        )
    except DomainError as exc:
        error = exc
        conversation.refresh_from_db()
    status = error.http_status if error else 200
    if not request.htmx:
        if error is None:
            return redirect(chat_url(conversation))
        return render_page(request, conversation, status=status, settings_error=error)
    context = panel_context(conversation, settings_error=error, saved=error is None)
    return render(request, "agents/partials/chat_settings.html", context, status=status)


@login_required
@require_http_methods(["POST"])
def chat_close(request: HtmxHttpRequest, conversation_id: int) -> HttpResponse:
    """Close the tab; the conversation and any answer running in it go on (reopen it from the
    history)."""
    conversation = _owned(request, conversation_id)
    conversation_update(
        conversation=conversation, actor=request.user, interface=AuditInterface.WEB, is_open=False
    )
    return redirect("chat_home")


@login_required
@require_POST
def chat_reopen(request: HtmxHttpRequest, conversation_id: int) -> HttpResponse:
    conversation = _owned(request, conversation_id)
    conversation_update(
        conversation=conversation, actor=request.user, interface=AuditInterface.WEB, is_open=True
    )
    return redirect(chat_url(conversation))
