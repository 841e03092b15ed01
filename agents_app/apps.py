from django.apps import AppConfig


class AgentsAppConfig(AppConfig):
    name = "agents_app"
    verbose_name = "Agents"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_out
        from django.db.models.signals import post_delete, post_save

        from agents_app.contracts.logs import keep_log
        from agents_app.conversations.services import answer_next
        from agents_app.core import checks  # noqa: F401  registers the system checks
        from agents_app.core.credentials import api_key_deleted, api_key_saved, session_logged_out
        from agents_app.models import ApiKey
        from agents_app.orchestration.children import on_run_finished, on_run_transition
        from agents_app.runs.lifecycle import FINISH_HOOKS
        from agents_app.runs.writer import TRANSITION_HOOKS

        # A chat answer's end answers the message waiting next (conversations/services.py).
        # A contract attempt's end writes its log file (contracts/logs.py).
        # A child's end hands its envelope to its parent; a parent's cancels its children
        # (orchestration/children.py).
        for hook in (answer_next, keep_log, on_run_finished):
            if hook not in FINISH_HOOKS:
                FINISH_HOOKS.append(hook)
        # A child tells its parent how it is (orchestration/children.py).
        if on_run_transition not in TRANSITION_HOOKS:
            TRANSITION_HOOKS.append(on_run_transition)
        # A key revoked or deleted, a session logged out: its sockets and streams close
        # (core/credentials.py).
        post_save.connect(api_key_saved, sender=ApiKey, dispatch_uid="api-key-saved")
        post_delete.connect(api_key_deleted, sender=ApiKey, dispatch_uid="api-key-deleted")
        user_logged_out.connect(session_logged_out, dispatch_uid="session-logged-out")
