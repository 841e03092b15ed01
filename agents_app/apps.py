from django.apps import AppConfig


class AgentsAppConfig(AppConfig):
    name = "agents_app"
    verbose_name = "Agents"

    def ready(self) -> None:
        from agents_app.conversations.services import answer_next
        from agents_app.core import checks  # noqa: F401  registers the system checks
        from agents_app.runs.lifecycle import FINISH_HOOKS

        # A chat answer's end answers the message waiting next (conversations/services.py).
        if answer_next not in FINISH_HOOKS:
            FINISH_HOOKS.append(answer_next)
