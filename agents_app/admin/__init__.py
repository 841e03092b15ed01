"""The Django admin for staff: runs, tasks, audit, keys, webhooks and the kill switch
(`runs`), approvals, rules and YOLO grants (`approvals`), LLM connections (`connections`), agent
profiles (`profiles`).
Django's autodiscovery imports this package; importing the modules registers their
ModelAdmins."""

from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm

from agents_app.admin import (  # noqa: F401  (registers the ModelAdmins)
    approvals,
    connections,
    profiles,
    runs,
)
from agents_app.core.sign_in import ThrottledSignIn
from agents_app.models import AuditInterface


class AdminSignInForm(ThrottledSignIn, AdminAuthenticationForm):
    """/admin/login/, throttled and audited as /login/ is (one count for both pages)."""

    interface = AuditInterface.ADMIN


admin.site.site_header = "AgentDesk administration"
admin.site.site_title = "AgentDesk admin"
admin.site.index_title = "Runs, tools, approvals and keys"
admin.site.login_form = AdminSignInForm
