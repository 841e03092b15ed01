"""The Settings page, drawn once for every form on it: approval rules and YOLO mode
(`web.approvals`), API keys (`web.api_keys`), browser notifications (a script alone:
static/agentdesk/notifications.js). A form's view passes what it has to show: its error, a key
just created."""

from typing import Any

from django.http import HttpResponse
from django.shortcuts import render

from agents_app.approvals import selectors
from agents_app.approvals.policy import YOLO_PERMISSION
from agents_app.core.api_keys import MAX_ACTIVE_KEYS, NAME_MAX_CHARS, api_keys_for
from agents_app.core.errors import DomainError
from agents_app.models import UserPreferences
from agents_app.web.views import HtmxHttpRequest


def render_settings(
    request: HtmxHttpRequest,
    *,
    error: DomainError | None = None,
    status: int = 200,
    **extra: Any,
) -> HttpResponse:
    preferences = UserPreferences.objects.filter(user=request.user).first()
    keys = list(api_keys_for(request.user))
    context = {
        "nav": "settings",
        "error": error,
        "rules": list(selectors.approval_rules_for(request.user)),
        "yolo_on": bool(preferences and preferences.yolo),
        "can_yolo": request.user.has_perm(YOLO_PERMISSION),
        "api_keys": keys,
        "api_keys_active": sum(1 for key in keys if not key.revoked),
        "api_keys_max": MAX_ACTIVE_KEYS,
        "api_key_name_max": NAME_MAX_CHARS,
        **extra,
    }
    return render(request, "agents/settings.html", context, status=status)
