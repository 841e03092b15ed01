from django.apps import AppConfig


class AgentsAppConfig(AppConfig):
    name = "agents_app"
    verbose_name = "Agents"

    def ready(self) -> None:
        from agents_app.contracts.logs import keep_log
        from agents_app.conversations.services import answer_next
        from agents_app.core import checks  # noqa: F401  registers the system checks
        from agents_app.runs.lifecycle import FINISH_HOOKS

        # A chat answer's end answers the message waiting next (conversations/services.py).
        # A contract attempt's end writes its log file (contracts/logs.py).
        for hook in (answer_next, keep_log):
            if hook not in FINISH_HOOKS:
                FINISH_HOOKS.append(hook)
