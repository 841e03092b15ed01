"""The Django admin for staff: runs, tasks, audit, keys, webhooks and the kill switch
(`runs`), approvals, rules and YOLO grants (`approvals`), LLM connections (`connections`), agent
profiles (`profiles`).
Django's autodiscovery imports this package; importing the modules registers their
ModelAdmins."""

from django.contrib import admin

from agents_app.admin import (  # noqa: F401  (registers the ModelAdmins)
    approvals,
    connections,
    profiles,
    runs,
)

admin.site.site_header = "AgentDesk administration"
admin.site.site_title = "AgentDesk admin"
admin.site.index_title = "Runs, tools, approvals and keys"
