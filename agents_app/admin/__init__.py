"""The Django admin for staff: runs, tasks, audit, keys, webhooks and the kill switch
(`runs`), approvals, rules and YOLO grants (`approvals`). Django's autodiscovery imports this
package; importing both modules registers their ModelAdmins."""

from agents_app.admin import approvals, runs  # noqa: F401  (registers the ModelAdmins)
