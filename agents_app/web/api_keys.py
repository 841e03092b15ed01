"""A person's own API keys on the Settings page: create one (its raw key shown once, in the
answer to the POST, never stored or redirected), revoke one. The rules live in
`core.api_keys`; this module only turns a form into a call and the outcome into the page."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from agents_app.core.api_keys import api_key_create as create_key
from agents_app.core.api_keys import api_key_revoke as revoke_key
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.inputs import QUERY_INT_MAX
from agents_app.models import AuditInterface
from agents_app.web.settings_page import render_settings
from agents_app.web.views import HtmxHttpRequest


@login_required
@require_POST
def api_key_create(request: HtmxHttpRequest) -> HttpResponse:
    name = request.POST.get("name", "")
    try:
        key, raw_key = create_key(user=request.user, name=name, interface=AuditInterface.WEB)
    except DomainError as error:
        field = error.details.get("field") if isinstance(error.details, dict) else None
        # Shown in the keys' own section, beside the form, rather than atop the page.
        return render_settings(
            request,
            status=error.http_status,
            api_key_error=error,
            api_key_error_field=field,
            api_key_name=name,
        )
    # Answered here rather than redirected: the raw key must not travel in a URL, a cookie or
    # the session, so this answer is the only place it ever appears.
    response = render_settings(request, new_api_key=key, new_api_key_raw=raw_key)
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def api_key_revoke(request: HtmxHttpRequest, key_id: int) -> HttpResponse:
    if key_id > QUERY_INT_MAX:  # no key has such an id; PostgreSQL would refuse to look
        raise Http404("API key not found")
    try:
        key = revoke_key(user=request.user, key_id=key_id, interface=AuditInterface.WEB)
    except DomainError as error:
        if error.code == ErrorCode.NOT_FOUND:  # someone else's key looks like a missing one
            raise Http404("API key not found") from error
        raise
    messages.success(request, f"Revoked “{key.name}” ({key.prefix}…): it no longer works.")
    return redirect("settings")
