from django.apps import AppConfig


class AgentsAppConfig(AppConfig):
    name = "agents_app"
    verbose_name = "Agents"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_out
        from django.db.models.signals import post_delete, post_save

        from agents_app.approvals.pins import approvals_expire_for_tool, rules_follow_rehash
        from agents_app.contracts.recipe import CONTRACT
        from agents_app.conversations.recipe import CHAT
        from agents_app.core import checks  # noqa: F401  registers the system checks
        from agents_app.core.credentials import api_key_deleted, api_key_saved, session_logged_out
        from agents_app.models import ApiKey, RunKind
        from agents_app.orchestration.recipes import CHILD, MICRO, TEAM
        from agents_app.runs.recipes import register
        from agents_app.runs.task_recipe import TASK
        from tools_app.mcp.pins import tool_changed, tool_rehashed

        # The one table where the kinds of run meet (runs.recipes): each kind's recipe lives
        # in its own package; the worker, a run's end and the pages ask it.
        register(
            {
                RunKind.TASK: TASK,
                RunKind.CHAT: CHAT,
                RunKind.CONTRACT: CONTRACT,
                RunKind.TEAM: TEAM,
                RunKind.CHILD: CHILD,
                RunKind.MICRO: MICRO,
            }
        )
        # A key revoked or deleted, a session logged out: its sockets and streams close
        # (core/credentials.py).
        post_save.connect(api_key_saved, sender=ApiKey, dispatch_uid="api-key-saved")
        post_delete.connect(api_key_deleted, sender=ApiKey, dispatch_uid="api-key-deleted")
        user_logged_out.connect(session_logged_out, dispatch_uid="session-logged-out")
        # An MCP tool changed on its server, or its pin was completed (tools_app.mcp.pins).
        tool_changed.connect(approvals_expire_for_tool, dispatch_uid="tool-changed-expire")
        tool_rehashed.connect(rules_follow_rehash, dispatch_uid="tool-rehashed-rules")
