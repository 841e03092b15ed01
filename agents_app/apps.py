from django.apps import AppConfig


class AgentsAppConfig(AppConfig):
    name = "agents_app"
    verbose_name = "Agents"

    def ready(self) -> None:
        from agents_app.core import checks  # noqa: F401  registers the system checks
